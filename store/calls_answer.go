package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// CallChange is what a write did to a call: its status and time of change.
type CallChange struct {
	Status    string
	UpdatedAt time.Time
}

// answeredRound is what an answer's update returns: the round as the
// answer left it, whether it is held on a session, and the call's new
// status and time of change (nil when the call no longer waited for it).
type answeredRound struct {
	Round
	Held          bool       `db:"held"`
	CallStatus    *string    `db:"call_status"`
	CallUpdatedAt *time.Time `db:"call_updated_at"`
}

// answerTx stores the answers of round seq. known, when given, is the call
// (with its server's round lifetime) and the round as the transaction read
// them before: a request sent at once then reads neither again.
func (s *Store) answerTx(ctx context.Context, tx pgx.Tx, callID string, seq int, responses json.RawMessage, by string, audit []AuditEntry, expired *bool, known *answerKnown) (CallChange, error) {
	var change CallChange
	var pending, moved, held bool
	var sending *Attempt
	if d := directFor(ctx); d != nil && known != nil {
		c := *known.call
		sending = &Attempt{Call: &c, RoundTTL: known.roundTTL}
		d.knows(sending, attemptSkip{call: true, round: true,
			before: known.round.Asking == 0 && known.round.StateExpiredAt == nil})
	}
	// The round, the call, the audit, the draft and the call's note in one
	// round trip. A held round's answer goes back on the open session, so
	// its call is running: the note wakes the instance holding it. Any
	// other round's answer is sent by a new job, below. A round no longer
	// pending changes nothing; a call no longer waiting for it rolls back.
	b := &pgx.Batch{}
	b.Queue(`
		with r as (
			update rounds set status = 'answered', responses = $3, answered_by = $4, answered_at = now()
			where call_id = $1 and seq = $2 and status = 'pending' and expires_at > now()
			returning held_by is not null as held, `+roundColumns+`
		), c as (
			update calls set status = case when r.held then 'running' else 'queued' end, updated_at = now()
			from r
			where calls.id = $1 and calls.current_seq = $2 and calls.status = 'input_required'
			returning calls.status, calls.updated_at
		)
		select r.*, c.status as call_status, c.updated_at as call_updated_at from r left join c on true`,
		callID, seq, responses, by).Query(func(rows pgx.Rows) error {
		got, err := pgx.CollectRows(rows, pgx.RowToStructByName[answeredRound])
		if err != nil || len(got) == 0 {
			return err
		}
		r := got[0]
		pending, moved, held = true, r.CallStatus == nil, r.Held
		if r.CallStatus != nil {
			change = CallChange{Status: *r.CallStatus, UpdatedAt: *r.CallUpdatedAt}
			if sending != nil {
				sending.Round = &r.Round
				sending.Call.Status, sending.Call.UpdatedAt = change.Status, change.UpdatedAt
			}
		}
		return nil
	})
	for _, e := range audit {
		if err := queueAudit(b, e); err != nil {
			return change, err
		}
	}
	// A draft of an answered round is never shown again.
	b.Queue(`delete from drafts where call_id = $1 and seq = $2`, callID, seq)
	// A retry sent at once reads what it needs here, after the answer.
	directFor(ctx).queue(s, b, callID, seq)
	queueNotes(ctx, b)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return change, err
	}
	switch {
	case !pending:
		return change, s.whyNotPendingTx(ctx, tx, callID, seq, expired)
	case moved:
		return change, conflict("This round is no longer waiting for answers.")
	case held:
		return change, nil
	}
	return change, s.enqueueTx(ctx, tx, callID, seq)
}

// answerKnown is what an answer's transaction read before it answers.
type answerKnown struct {
	call     *Call
	roundTTL time.Duration
	round    *Round
}

// Decision is what the caller of AnswerChecked decided to store.
type Decision struct {
	Responses json.RawMessage
	By        string
	Audit     []AuditEntry
	// Refusal, when set, ends the call cancelled with this message
	// instead of sending the answers: the person declined a sampling
	// request, which the spec answers by not sending the request again.
	Refusal string
}

// Answering is what AnswerChecked reads for its decide: the call, its
// round, and whether the person answering is whom the call's rounds are
// assigned to (as IsAssignee says), read in the same transaction.
type Answering struct {
	Call     *Call
	Round    *Round
	Assigned bool
}

// AnswerChecked reads a call and its round seq, with whether person is
// assigned its rounds, lets decide check them and the answers, and stores
// what it decides, all in one transaction: an answer costs one, and decide
// needs no other connection. An error from decide rolls back and is
// returned as it is. It returns the call as the answer left it.
func (s *Store) AnswerChecked(ctx context.Context, callID string, seq int, person string, decide func(Answering) (Decision, error)) (*Call, error) {
	var expired bool
	var call *Call
	var instance string
	err := s.announcedTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// The call, the round and the person's membership of the team the
		// call is assigned to (if it is) in one round trip.
		var round *Round
		var member bool
		var ttl time.Duration
		b := &pgx.Batch{}
		b.Queue(`select `+callColumns+`, `+callTTLColumn+` from calls c join servers s on s.id = c.server_id where c.id = $1`, callID).
			Query(func(rows pgx.Rows) error {
				ct, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[callWithTTL])
				if err != nil {
					return translate(err, "call")
				}
				call, ttl = &ct.Call, ct.roundTTL()
				return nil
			})
		b.Queue(`select `+roundColumnsNow+` from rounds where call_id = $1 and seq = $2`, callID, seq).
			Query(func(rows pgx.Rows) error {
				var err error
				round, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Round])
				return translate(err, "round")
			})
		b.Queue(`select call_team_member($1, $2)`, callID, person).
			QueryRow(func(row pgx.Row) error { return row.Scan(&member) })
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		d, err := decide(Answering{Call: call, Round: round,
			Assigned: call.Assignee != nil && assigned(*call.Assignee, person, member)})
		instance = auditInstance(d.Audit)
		if err != nil {
			return err
		}
		if d.Refusal != "" {
			if err := s.refuseTx(ctx, tx, callID, seq, d.Responses, d.By, d.Refusal, d.Audit, &expired); err != nil {
				return err
			}
			call.Status, call.Error, call.UpdatedAt = CallCancelled, &d.Refusal, time.Now()
			return nil
		}
		change, err := s.answerTx(ctx, tx, callID, seq, d.Responses, d.By, d.Audit, &expired,
			&answerKnown{call: call, roundTTL: ttl, round: round})
		if err != nil {
			return err
		}
		call.Status, call.UpdatedAt = change.Status, change.UpdatedAt
		return nil
	})
	if expired {
		if err := s.ExpireRound(ctx, instance, callID, seq); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	return call, nil
}

// whyNotPendingTx explains why a round could not be answered.
func (s *Store) whyNotPendingTx(ctx context.Context, tx pgx.Tx, callID string, seq int, expired *bool) error {
	var status string
	var past bool
	var by *string
	err := tx.QueryRow(ctx, `select status, expires_at <= now(), answered_by from rounds where call_id = $1 and seq = $2`,
		callID, seq).Scan(&status, &past, &by)
	if err != nil {
		return translate(err, "round")
	}
	switch {
	case status == RoundPending && past:
		*expired = true
		return conflict("%s", RoundExpiredMessage)
	case status == RoundAnswered && by != nil:
		return conflict("%s", AlreadyAnsweredMessage(*by))
	case status == RoundAnswered:
		return conflict("%s", AlreadyAnsweredMessage(""))
	case status == RoundExpired:
		return conflict("%s", RoundExpiredMessage)
	default:
		return conflict("This round was %s.", status)
	}
}

// ExpireRound ends a pending round past its deadline, and its call, as the
// expiry job would, writing the same audit row in the same transaction:
// found on an answer or a read, not by the job. instance is the instance
// that found it.
func (s *Store) ExpireRound(ctx context.Context, instance, callID string, seq int) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// A held question is its holder's to cancel towards the server.
		// A round its plan answers at the deadline is its job's (see
		// ExpireDueRounds).
		tag, err := tx.Exec(ctx, `update rounds set status = 'expired'
			where call_id = $1 and seq = $2 and status = 'pending' and held_by is null
			  and (on_expiry = 'expire' or expires_at < now() - interval '1 hour')`, callID, seq)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `insert into audit_log (instance, actor, action, target, detail)
			select $1, 'system', 'round.expired', c.id::text, jsonb_build_object('seq', $3::int, 'server', s.name)
			from calls c join servers s on s.id = c.server_id where c.id = $2`, instance, callID, seq); err != nil {
			return err
		}
		tag, err = tx.Exec(ctx, `update calls set status = 'expired', error = $3,
			updated_at = now(), finished_at = now()
			where id = $1 and current_seq = $2 and status = 'input_required'`, callID, seq, RoundExpiredMessage)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return s.callFinishedTx(ctx, tx, callID)
	})
}

// refuseTx ends a pending round and its call without a retry (see
// Decision.Refusal): responses records the choices made, message says on
// the call why it ended. Like an answer, it happens once.
func (s *Store) refuseTx(ctx context.Context, tx pgx.Tx, callID string, seq int, responses json.RawMessage, by, message string, audit []AuditEntry, expired *bool) error {
	tag, err := tx.Exec(ctx, `
		update rounds set status = 'answered', responses = $3, answered_by = $4, answered_at = now()
		where call_id = $1 and seq = $2 and status = 'pending' and expires_at > now() and held_by is null`,
		callID, seq, responses, by)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return s.whyNotPendingTx(ctx, tx, callID, seq, expired)
	}
	tag, err = tx.Exec(ctx, `
		update calls set status = 'cancelled', error = $3, retryable = false, updated_at = now(), finished_at = now()
		where id = $1 and current_seq = $2 and status = 'input_required'`, callID, seq, message)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return conflict("%s", NotWaitingMessage)
	}
	for _, e := range audit {
		if err := auditTx(ctx, tx, e); err != nil {
			return err
		}
	}
	return s.callFinishedTx(ctx, tx, callID)
}

// auditInstance is the instance named by an action's audit entries, for
// the records written beside it.
func auditInstance(audit []AuditEntry) string {
	if len(audit) > 0 {
		return audit[0].Instance
	}
	return ""
}
