package store

import (
	"context"
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
	reading bool // the attempt's reads are queued
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

// queue reads the attempt of request seq at the end of b, after the
// batch's changes, in the transaction that enqueues the request.
func (d *Direct) queue(s *Store, b *pgx.Batch, callID string, seq int) {
	if d == nil {
		return
	}
	d.Attempt, d.reading = s.queueAttempt(b, callID, seq), true
}

// scheduleTx inserts the job of a request sent directly, scheduled
// d.After from now, and reads its attempt unless the transaction's batch
// already did.
func (s *Store) scheduleTx(ctx context.Context, tx pgx.Tx, d *Direct, callID string, seq int) error {
	res, err := s.quietJobs.InsertTx(ctx, tx, RequestArgs{CallID: callID, Seq: seq},
		&river.InsertOpts{ScheduledAt: time.Now().Add(d.After)})
	if err != nil {
		return err
	}
	if a := announcing(ctx); a != nil {
		a.direct = true
	}
	d.Job = res.Job.ID
	if !d.reading {
		b := &pgx.Batch{}
		d.Attempt = s.queueAttempt(b, callID, seq)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return translate(err, "call")
		}
	}
	return d.Attempt.check(callID, seq)
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
