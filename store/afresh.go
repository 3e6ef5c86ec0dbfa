package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// StateRefusal is what the engine decided when a server refused the state
// of a round its answers went back with (see mcpclient.StateExpired).
type StateRefusal struct {
	// Afresh asks the server afresh at once: the call's next request goes
	// without answers and state, and the person's answers are given again
	// to the questions that come back the same. Without it the call fails
	// with Message, and a retry asks afresh.
	Afresh  bool
	Message string
	// Age is how long after the round was asked its answer went back; it
	// tells how long the server keeps its questions.
	Age      time.Duration
	Server   string
	Instance string
}

// RefuseState records that the server refused the state of round seq
// when its answers went back: the round keeps when, so every later request
// of the call for it goes afresh. Then, in the same transaction, the call
// is queued again and its restarts counted (Afresh), or fails retryable
// with the refusal's message. The audit log says which.
func (s *Store) RefuseState(ctx context.Context, callID string, seq int, r StateRefusal, with ...Outcome) error {
	return s.announcedTx(ctx, func(tx *txn) error {
		var webhook bool
		b := &pgx.Batch{}
		// Once a round: a duplicate job that sent the same state and was
		// refused too finds it refused already, and changes nothing.
		var first bool
		b.Queue(`update rounds set state_expired_at = now(), asked_afresh = $3
			where call_id = $1 and seq = $2 and state_expired_at is null returning true`, callID, seq, r.Afresh).
			QueryRow(movedOn(callID, seq, &first))
		if r.Afresh {
			b.Queue(`update calls set status = 'queued', restarts = restarts + 1, error = null, retryable = false,
				       retry_at = null, retry_since = null, retry_reason = null, updated_at = now()
				where id = $1 and current_seq = $2 and status in ('queued', 'running')
				returning false`, callID, seq).QueryRow(movedOn(callID, seq, &webhook))
		} else {
			b.Queue(`update calls set status = 'failed', error = $3, retryable = true, updated_at = now(), finished_at = now()
				where id = $1 and current_seq = $2 and status in ('queued', 'running')
				returning webhook_url is not null`, callID, seq, clean(r.Message, 16<<10)).QueryRow(movedOn(callID, seq, &webhook))
		}
		action := "call.state_refused"
		if r.Afresh {
			action = "call.asked_afresh"
		}
		if err := queueAudit(b, AuditEntry{Instance: r.Instance, Actor: "system", Action: action, Target: callID,
			Detail: map[string]any{"seq": seq, "server": r.Server, "age_seconds": r.Age.Round(time.Second).Seconds()}}); err != nil {
			return err
		}
		firstOutcome(with).queue(b)
		queueNotes(tx, b)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if r.Afresh {
			return s.enqueueTx(ctx, tx, nil, callID, seq)
		}
		if !webhook {
			return nil
		}
		return s.callFinishedTx(ctx, tx, callID)
	})
}

// movedOn scans the flag a guarded update of a call returns, and says the
// call moved on when it updated nothing.
func movedOn(callID string, seq int, flag *bool) func(pgx.Row) error {
	return func(row pgx.Row) error {
		err := row.Scan(flag)
		if errors.Is(err, pgx.ErrNoRows) {
			return conflict("call %s moved on before request %d finished", callID, seq)
		}
		return err
	}
}

// StateLife is what a server's refusals of its rounds' state tell of how
// long it keeps its questions, over a recent span.
type StateLife struct {
	// Refused counts the rounds whose state the server refused.
	Refused int `db:"refused"`
	// YoungestRefused is the shortest time after which an answer's state
	// was refused; OldestAccepted the longest after which one was taken.
	YoungestRefused *time.Duration `db:"-"`
	OldestAccepted  *time.Duration `db:"-"`
}

// ServerStateLife measures how long the server's questions' state lasts,
// from the refusals of the last span: the youngest state it refused, and
// the oldest it took with an answer in the calls that had a refusal.
func (s *Store) ServerStateLife(ctx context.Context, serverID int64, span time.Duration) (StateLife, error) {
	var l StateLife
	var refusedMs, acceptedMs *int64
	// The refusals are found by their own index; the oldest state taken is
	// looked for only in the calls that had one, so the page costs the
	// same however many calls the server had.
	err := s.pool.QueryRow(ctx, `
		with refused as (
			select r.call_id, r.created_at, r.state_expired_at from rounds r join calls c on c.id = r.call_id
			where r.state_expired_at > now() - $2::bigint * interval '1 millisecond' and c.server_id = $1
		)
		select (select count(*) from refused),
		       (select (min(extract(epoch from state_expired_at - created_at)) * 1000)::bigint from refused),
		       (select (max(extract(epoch from r.answered_at - r.created_at)) * 1000)::bigint
		        from rounds r join calls c on c.id = r.call_id
		        where r.call_id in (select call_id from refused) and r.state_expired_at is null
		          and r.request_state is not null and r.held_by is null and r.status = 'answered'
		          and (c.current_seq > r.seq or c.status = 'complete'))`,
		serverID, span.Milliseconds()).Scan(&l.Refused, &refusedMs, &acceptedMs)
	if refusedMs != nil {
		d := time.Duration(*refusedMs) * time.Millisecond
		l.YoungestRefused = &d
	}
	if acceptedMs != nil {
		d := time.Duration(*acceptedMs) * time.Millisecond
		l.OldestAccepted = &d
	}
	return l, err
}
