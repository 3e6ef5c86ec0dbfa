package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// A request the instance that commits it sends at once, itself, rather
// than through River: the answer's transaction (or the new call's) inserts
// the request's job scheduled After from now, and reads what the request
// needs, so the instance can send it as soon as the commit returns with no
// transaction more. The outcome's transaction removes the job while it is
// still scheduled (Outcome.Scheduled). Only an instance that dies, or
// stops, between the two leaves it: River then sends the request when the
// job falls due, as it sends any other. A round thus costs the answer's
// commit and the outcome's, and no fetch, read or completion of a job.
//
// Direct is what such a transaction committed: its job and its attempt.
// Job is 0 when the transaction enqueued no request (a held round's
// answer goes back on its open session; a refused round ends its call).
type Direct struct {
	After   time.Duration
	Job     int64
	Attempt *Attempt
	// queued: the job's insert and the attempt's reads of request seq of
	// callID went in a batch.
	queued bool
	callID string
	seq    int
	// known is what the transaction read of the attempt itself, and skip
	// which reads it spares (see knows).
	known *Attempt
	skip  attemptSkip
}

// knows gives the attempt what the transaction that enqueues the request
// read itself: the reads skip names are not made again.
func (d *Direct) knows(a *Attempt, skip attemptSkip) {
	if d != nil && d.Job == 0 {
		d.known, d.skip = a, skip
	}
}

type directKey struct{}

// WithDirect asks the transactions run on ctx that enqueue a request (an
// answer, a new call) to schedule its job after the given time and read
// its attempt. The Direct returned is filled when such a transaction
// commits; nothing in it may be used if it did not.
func WithDirect(ctx context.Context, after time.Duration) (context.Context, *Direct) {
	d := &Direct{After: after}
	return context.WithValue(ctx, directKey{}, d), d
}

func directFor(ctx context.Context) *Direct {
	d, _ := ctx.Value(directKey{}).(*Direct)
	return d
}

// insertDirectJob inserts the job of a request sent directly, scheduled
// $4 milliseconds from now, when the call waits for request $3: a plain
// insert, where River's own takes a statement and a round trip of its own
// and costs a round a fifth of its Postgres time. The columns left out
// take River's defaults (priority, metadata, tags); RequestArgs has no
// uniqueness to keep.
const insertDirectJob = `
	insert into river_job (args, kind, max_attempts, queue, scheduled_at, state)
	select $1::jsonb, $5, $6, $7, now() + make_interval(secs => $4::float8 / 1000), 'scheduled'
	where exists (select 1 from calls where id = $2 and current_seq = $3 and status = 'queued')
	returning id`

// queue adds to b the insert of request seq's job and the reads of its
// attempt, after the batch's changes, in the transaction that enqueues the
// request. The job is inserted only if the batch left the call queued for
// that request: a held round's answer leaves it running, and a batch that
// changed nothing is rolled back.
func (d *Direct) queue(s *Store, b *pgx.Batch, callID string, seq int) {
	if d == nil || d.Job != 0 {
		return
	}
	args, _ := json.Marshal(RequestArgs{CallID: callID, Seq: seq}) // two plain fields
	b.Queue(insertDirectJob, string(args), callID, seq, d.After.Milliseconds(),
		RequestArgs{}.Kind(), RequestArgs{}.InsertOpts().MaxAttempts, river.QueueDefault).
		Query(func(rows pgx.Rows) error {
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if len(ids) > 0 {
				d.Job = ids[0]
			}
			return err
		})
	d.Attempt, d.queued = s.queueAttempt(b, callID, seq, d.known, d.skip), true
	d.callID, d.seq = callID, seq
}

// sends says whether request seq of callID, enqueued now, is the one d
// sends at once: the one its batch queued, or else the first the
// transaction enqueues. A batch whose answer went back on a held session
// queued one that was never enqueued; another is River's.
func (d *Direct) sends(callID string, seq int) bool {
	switch {
	case d == nil:
		return false
	case d.queued:
		return d.callID == callID && d.seq == seq
	default:
		return d.Job == 0
	}
}

// scheduleTx inserts the job of a request sent directly and reads its
// attempt, unless the transaction's batch already did (queue).
func (s *Store) scheduleTx(ctx context.Context, tx pgx.Tx, d *Direct, callID string, seq int) error {
	if !d.queued {
		b := &pgx.Batch{}
		d.queue(s, b, callID, seq)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return translate(err, "call")
		}
	}
	d.queued = false
	if err := d.Attempt.check(callID, seq); err != nil {
		return err
	}
	if d.Job == 0 {
		return conflict("call %s is not queued for request %d", callID, seq)
	}
	if a := announcing(ctx); a != nil {
		a.direct = true
	}
	return nil
}

// HandToRiver makes a directly sent request's job due now, while it is
// still scheduled, and wakes the workers: the request goes River's way
// (a handshake-era server holds its call open for minutes; the instance
// is stopping, or has no free sender).
func (s *Store) HandToRiver(ctx context.Context, job int64) error {
	return s.announcedTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `update river_job set state = 'available', scheduled_at = now()
			where id = $1 and state = 'scheduled'`, job)
		if err == nil && tag.RowsAffected() > 0 {
			announcing(ctx).jobs = true
		}
		return err
	})
}

// PutOffJob moves a directly sent request's job, while still scheduled,
// to at: the server could not take the request, and it is sent again then
// (as River's snooze would).
func (s *Store) PutOffJob(ctx context.Context, job int64, at time.Time) error {
	_, err := s.pool.Exec(ctx, `update river_job set scheduled_at = $2 where id = $1 and state = 'scheduled'`, job, at)
	return err
}

// unscheduleJob removes a directly sent request's job with the request's
// outcome, while River has not taken it: still scheduled, or due but not
// yet fetched. A job River runs (the direct send outlived its delay) is
// left to find the call moved on.
const unscheduleJob = `delete from river_job where id = $1 and state in ('scheduled', 'available')`
