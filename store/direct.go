package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// A request the instance that commits it sends at once, itself, rather
// than through River: the answer's transaction (or the new call's) inserts
// the request's job scheduled after a delay (queue.ScheduleRequest), and
// reads what the request needs, so the instance can send it as soon as the
// commit returns with no transaction more. The outcome's transaction
// removes the job while it is still scheduled (queue.Finish). Only an
// instance that dies, or stops, between the two leaves it: River then
// sends the request when the job falls due, as it sends any other. A round
// thus costs the answer's commit and the outcome's, and no fetch, read or
// completion of a job.

// Direct is a request a transaction enqueued for its caller to send at
// once: its job, the safety net, and its attempt. AnswerChecked and
// CreateCallDirect return it, nil when they enqueued no request (a held
// round's answer goes back on its open session; a refused round ends its
// call).
type Direct struct {
	Job     int64
	Attempt *Attempt
	// after is how long from the commit the job waits before River may
	// send the request.
	after time.Duration
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

// newDirect is the Direct of a transaction whose caller sends the request
// it enqueues at once, its job due after from the commit; nil when after
// is zero: the request goes River's way.
func newDirect(after time.Duration) *Direct {
	if after <= 0 {
		return nil
	}
	return &Direct{after: after}
}

// knows gives the attempt what the transaction that enqueues the request
// read itself: the reads skip names are not made again.
func (d *Direct) knows(a *Attempt, skip attemptSkip) {
	if d != nil && d.Job == 0 {
		d.known, d.skip = a, skip
	}
}

// queue adds to b the insert of request seq's job and the reads of its
// attempt, after the batch's changes, in the transaction that enqueues the
// request. The job is inserted only if the batch left the call queued for
// that request: a held round's answer leaves it running, and a batch that
// changed nothing is rolled back.
func (d *Direct) queue(s *Store, b *pgx.Batch, callID string, seq int) {
	if d == nil || d.Job != 0 {
		return
	}
	queue.ScheduleRequest(callID, seq, d.after).Queue(b).Query(func(rows pgx.Rows) error {
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

// sent is d when the transaction enqueued its request, else nil.
func (d *Direct) sent() *Direct {
	if d == nil || d.Job == 0 {
		return nil
	}
	return d
}

// enqueueTx enqueues request seq of callID in tx: as d's, sent at once by
// the caller, when d sends it, else as River's job.
func (s *Store) enqueueTx(ctx context.Context, tx *txn, d *Direct, callID string, seq int) error {
	if d.sends(callID, seq) {
		return d.scheduleTx(ctx, s, tx, callID, seq)
	}
	return s.enqueueJobs(ctx, tx, queue.Insert{Args: queue.RequestArgs{CallID: callID, Seq: seq}})
}

// scheduleTx inserts the job of a request sent directly and reads its
// attempt, unless the transaction's batch already did (queue).
func (d *Direct) scheduleTx(ctx context.Context, s *Store, tx *txn, callID string, seq int) error {
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
	if tx.announced {
		tx.direct = true
	}
	return nil
}

// HandToRiver makes a directly sent request's job due now, while it is
// still scheduled, and wakes the workers: the request goes River's way
// (a handshake-era server holds its call open for minutes; the instance
// is stopping, or has no free sender).
func (s *Store) HandToRiver(ctx context.Context, job int64) error {
	return s.announcedTx(ctx, func(tx *txn) error {
		tag, err := queue.MakeDue(job).Exec(ctx, tx)
		if err == nil && tag.RowsAffected() > 0 {
			tx.jobs = true
		}
		return err
	})
}

// PutOffJob moves a directly sent request's job, while still scheduled,
// to at: the server could not take the request, and it is sent again then
// (as River's snooze would).
func (s *Store) PutOffJob(ctx context.Context, job int64, at time.Time) error {
	_, err := queue.PutOff(job, at).Exec(ctx, s.pool)
	return err
}
