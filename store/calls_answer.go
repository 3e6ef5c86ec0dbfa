package store

import (
	"context"
	"encoding/json"
	"errors"
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

// answer is what an answer's transaction stores, and what it read before.
type answer struct {
	callID string
	seq    int
	Decision
	// known is the call (with its server's round lifetime) and the round
	// as the transaction read them before: a request sent at once then
	// reads neither again.
	known answerKnown
	// sendAfter, when set, has the retry sent at once (see Direct).
	sendAfter time.Duration
}

// answerKnown is what an answer's transaction read before it answers.
type answerKnown struct {
	call     *Call
	roundTTL time.Duration
	round    *Round
}

// answerTx stores the answers of round a.seq, and enqueues its retry: as
// River's job, or, with a.sendAfter, as the request it returns for its
// caller to send at once (nil when none was enqueued: a held round's
// answer goes back on its open session).
func (s *Store) answerTx(ctx context.Context, tx *txn, a answer) (CallChange, *Direct, error) {
	callID, seq := a.callID, a.seq
	var change CallChange
	var pending, moved, held bool
	var sending *Attempt
	d := newDirect(a.sendAfter)
	if d != nil && a.known.call != nil {
		c := *a.known.call
		sending = &Attempt{Call: &c, RoundTTL: a.known.roundTTL}
		d.knows(sending, attemptSkip{call: true, round: true,
			before: a.known.round.Asking == 0 && a.known.round.StateExpiredAt == nil})
	}
	// The round, the call, the audit, the draft and the call's note in one
	// round trip. A held round's answer goes back on the open session, so
	// its call is running: the note wakes the instance holding it. Any
	// other round's answer is sent by a new job, below. A round no longer
	// pending changes nothing; a call no longer waiting for it rolls back.
	b := &pgx.Batch{}
	b.Queue(`
		with r as (
			update rounds set status = 'answered', responses = $3, answered_by = $4, answered_at = now(),
			       answered_for = nullif($5, '')
			where call_id = $1 and seq = $2 and status = 'pending' and expires_at > now()
			returning held_by is not null as held, `+roundColumns+`
		), c as (
			update calls set status = case when r.held then 'running' else 'queued' end, updated_at = now()
			from r
			where calls.id = $1 and calls.current_seq = $2 and calls.status = 'input_required'
			returning calls.status, calls.updated_at
		)
		select r.*, c.status as call_status, c.updated_at as call_updated_at from r left join c on true`,
		callID, seq, a.Responses, a.By, a.For).Query(func(rows pgx.Rows) error {
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
	for _, e := range a.Audit {
		if err := queueAudit(b, e); err != nil {
			return change, nil, err
		}
	}
	// A draft of an answered round is never shown again.
	b.Queue(`delete from drafts where call_id = $1 and seq = $2`, callID, seq)
	// A retry sent at once reads what it needs here, after the answer.
	d.queue(s, b, callID, seq)
	queueNotes(tx, b)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return change, nil, err
	}
	switch {
	case !pending:
		return change, nil, s.whyNotPendingTx(ctx, tx, callID, seq)
	case moved:
		return change, nil, conflict("This round is no longer waiting for answers.")
	case held:
		return change, nil, nil
	}
	if err := s.enqueueTx(ctx, tx, d, callID, seq); err != nil {
		return change, nil, err
	}
	return change, d.sent(), nil
}

// Decision is what the caller of AnswerChecked decided to store.
type Decision struct {
	Responses json.RawMessage
	By        string
	// For is whom By answers for, when not themselves (Answering.For).
	For   string
	Audit []AuditEntry
	// Refusal, when set, ends the call cancelled with this message
	// instead of sending the answers: the person declined a sampling
	// request, which the spec answers by not sending the request again.
	Refusal string
}

// Answering is what AnswerChecked reads for its decide: the call, its
// round, whether the person answering is whom the call's rounds are
// assigned to (as IsAssignee says), and whom they stand in for, read in
// the same transaction.
type Answering struct {
	Call     *Call
	Round    *Round
	Assigned bool
	// Delegating names the person away whose delegate the person
	// answering is, when the round is that person's (the call's assignee,
	// or its owner when it has none; see ActingFor); empty otherwise, and
	// always for a round that asks a URL-mode question (Round.AsksURL),
	// which the person who started the call completes, or the agent.
	Delegating string
}

// For says whom person, answering, answers for when not themselves: the
// person away they are the delegate of, or, for an admin or the owner
// answering a round given to someone else, that assignee. Empty when they
// answer for themselves (or for a team of theirs).
func (a Answering) For(person string) string {
	switch {
	case a.Assigned:
		return ""
	case a.Delegating != "":
		return a.Delegating
	case a.Round != nil && a.Round.Asks != nil:
		return ""
	case a.Call.Assignee != nil && *a.Call.Assignee != person:
		return *a.Call.Assignee
	case a.Call.Assignee == nil && a.Call.Owner != person:
		return a.Call.Owner
	}
	return ""
}

// Answer is an answer for AnswerChecked to check and store.
type Answer struct {
	CallID string
	Seq    int
	// Person is who answers.
	Person string
	// Decide checks the call and the round as read, and the answers, and
	// says what to store; its error rolls back and is returned as it is.
	Decide func(Answering) (Decision, error)
	// SendAfter, when set, is for a caller that sends the retry itself at
	// once: its River job, the safety net, is scheduled this long from
	// now, and AnswerChecked returns the request (see Direct). Zero
	// leaves the retry to River.
	SendAfter time.Duration
}

// AnswerChecked reads a call and its round, with whether the person is
// assigned its rounds, lets a.Decide check them and the answers, and
// stores what it decides, all in one transaction: an answer costs one, and
// Decide needs no other connection. It returns the call as the answer left
// it, and the retry for the caller to send at once (with a.SendAfter; nil
// otherwise, or when no retry was enqueued).
func (s *Store) AnswerChecked(ctx context.Context, a Answer) (*Call, *Direct, error) {
	var call *Call
	var sending *Direct
	var instance string
	err := s.announcedTx(ctx, func(tx *txn) error {
		// The call, the round and the person's membership of the team the
		// call is assigned to (if it is) in one round trip.
		var round *Round
		var member bool
		var ttl time.Duration
		b := &pgx.Batch{}
		b.Queue(`select `+callColumns+`, `+callTTLColumn+` from calls c join servers s on s.id = c.server_id where c.id = $1`, a.CallID).
			Query(func(rows pgx.Rows) error {
				ct, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[callWithTTL])
				if err != nil {
					return translate(err, "call")
				}
				call, ttl = &ct.Call, ct.roundTTL()
				return nil
			})
		b.Queue(`select `+roundColumnsNow+` from rounds where call_id = $1 and seq = $2`, a.CallID, a.Seq).
			Query(func(rows pgx.Rows) error {
				var err error
				round, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Round])
				return translate(err, "round")
			})
		b.Queue(`select call_team_member($1, $2)`, a.CallID, a.Person).
			QueryRow(func(row pgx.Row) error { return row.Scan(&member) })
		var delegating string
		b.Queue(delegatingSQL, a.CallID, a.Person).
			QueryRow(func(row pgx.Row) error { return row.Scan(&delegating) })
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if round == nil || round.Asks != nil || round.AsksURL() {
			delegating = ""
		}
		d, err := a.Decide(Answering{Call: call, Round: round,
			Assigned: roundAssigned(call, round, a.Person, member), Delegating: delegating})
		instance = auditInstance(d.Audit)
		if err != nil {
			return err
		}
		stored := answer{callID: a.CallID, seq: a.Seq, Decision: d,
			known: answerKnown{call: call, roundTTL: ttl, round: round}, sendAfter: a.SendAfter}
		if d.Refusal != "" {
			if err := s.refuseTx(ctx, tx, stored); err != nil {
				return err
			}
			call.Status, call.Error, call.UpdatedAt = CallCancelled, &d.Refusal, time.Now()
			return nil
		}
		change, direct, err := s.answerTx(ctx, tx, stored)
		if err != nil {
			return err
		}
		call.Status, call.UpdatedAt = change.Status, change.UpdatedAt
		sending = direct
		return nil
	})
	if pastDeadline(err) {
		if err := s.ExpireRound(ctx, instance, a.CallID, a.Seq); err != nil {
			return nil, nil, err
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return call, sending, nil
}

// whyNotPendingTx explains why a round could not be answered. A round
// still pending past its deadline is a conflict pastDeadline knows: it is
// expired once the answer's transaction has rolled back.
func (s *Store) whyNotPendingTx(ctx context.Context, tx pgx.Tx, callID string, seq int) error {
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
		return &Error{Kind: ErrConflict, Message: RoundExpiredMessage, pastDeadline: true}
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

// pastDeadline says err is an answer's to a round still pending past its
// deadline (see whyNotPendingTx).
func pastDeadline(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.pastDeadline
}

// ExpireRound ends a pending round past its deadline, and its call, as the
// expiry job would, writing the same audit row in the same transaction:
// found on an answer or a read, not by the job. instance is the instance
// that found it.
func (s *Store) ExpireRound(ctx context.Context, instance, callID string, seq int) error {
	return s.inTx(ctx, func(tx *txn) error {
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
// Decision.Refusal): a.Responses records the choices made, a.Refusal says
// on the call why it ended. Like an answer, it happens once.
func (s *Store) refuseTx(ctx context.Context, tx *txn, a answer) error {
	callID, seq := a.callID, a.seq
	tag, err := tx.Exec(ctx, `
		update rounds set status = 'answered', responses = $3, answered_by = $4, answered_at = now(),
		       answered_for = nullif($5, '')
		where call_id = $1 and seq = $2 and status = 'pending' and expires_at > now() and held_by is null`,
		callID, seq, a.Responses, a.By, a.For)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return s.whyNotPendingTx(ctx, tx, callID, seq)
	}
	tag, err = tx.Exec(ctx, `
		update calls set status = 'cancelled', error = $3, retryable = false, updated_at = now(), finished_at = now()
		where id = $1 and current_seq = $2 and status = 'input_required'`, callID, seq, a.Refusal)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return conflict("%s", NotWaitingMessage)
	}
	for _, e := range a.Audit {
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

// roundAssigned says whether person is assigned round r of call: a round
// that asks the owner (a URL-mode question) is theirs alone; any other,
// the call's assignee's.
func roundAssigned(call *Call, r *Round, person string, member bool) bool {
	if r != nil && r.Asks != nil && *r.Asks == AsksOwner {
		return person == call.Owner
	}
	return call.Assignee != nil && assigned(*call.Assignee, person, member)
}
