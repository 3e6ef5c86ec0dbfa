package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// What a round nobody answered does at its deadline (on_expiry).
const (
	OnExpiryExpire  = "expire"  // the round and its call expire (the default)
	OnExpiryDecline = "decline" // Rounds answers decline to the server
	OnExpiryCancel  = "cancel"  // Rounds answers cancel to the server
)

// EventRoundEscalated is the webhook event of a round given to someone
// else because nobody answered it in time.
const EventRoundEscalated = "round.escalated"

// Deadlines say what happens to a round nobody answers: after
// EscalateAfter it goes to EscalateTo (a person, or team:NAME), and at its
// deadline OnExpiry. Zero values leave the server's settings (for a call)
// or nothing (for a server).
type Deadlines struct {
	EscalateAfter time.Duration
	EscalateTo    string
	OnExpiry      string
}

// CheckDeadlines checks deadlines a person or a program gave: a known
// on_expiry, an escalation with both a time and someone to go to.
func (s *Store) CheckDeadlines(ctx context.Context, d Deadlines) error {
	switch d.OnExpiry {
	case "", OnExpiryExpire, OnExpiryDecline, OnExpiryCancel:
	default:
		return &Error{Kind: ErrInvalid, Message: `on_expiry must be "expire", "decline" or "cancel".`}
	}
	if d.EscalateAfter < 0 {
		return &Error{Kind: ErrInvalid, Message: "escalate_after must be a positive duration, such as 2h."}
	}
	if d.EscalateTo != "" {
		return s.CheckAssignee(ctx, d.EscalateTo)
	}
	return nil
}

func interval(d time.Duration) *string {
	if d <= 0 {
		return nil
	}
	v := fmt.Sprintf("%d milliseconds", d.Milliseconds())
	return &v
}

func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// setCallDeadlinesTx keeps a call's own deadlines, in its transaction.
func setCallDeadlinesTx(ctx context.Context, tx pgx.Tx, callID string, d *Deadlines) error {
	if d == nil || (*d == Deadlines{}) {
		return nil
	}
	_, err := tx.Exec(ctx, `insert into call_deadlines (call_id, escalate_after, escalate_to, on_expiry)
		values ($1, $2::interval, $3, $4)`, callID, interval(d.EscalateAfter), orNil(d.EscalateTo), orNil(d.OnExpiry))
	return err
}

// ServerDeadlines returns a server's deadlines.
func (s *Store) ServerDeadlines(ctx context.Context, name string) (Deadlines, error) {
	var d Deadlines
	var after *time.Duration
	var to *string
	err := s.pool.QueryRow(ctx, `select escalate_after, escalate_to, on_expiry from servers where name = $1`, name).
		Scan(&after, &to, &d.OnExpiry)
	if after != nil {
		d.EscalateAfter = *after
	}
	if to != nil {
		d.EscalateTo = *to
	}
	return d, translate(err, "server "+name)
}

// SetServerDeadlines sets a server's deadlines, for the rounds made from
// now on.
func (s *Store) SetServerDeadlines(ctx context.Context, name string, d Deadlines) error {
	if d.OnExpiry == "" {
		d.OnExpiry = OnExpiryExpire
	}
	if err := s.CheckDeadlines(ctx, d); err != nil {
		return err
	}
	if (d.EscalateAfter > 0) != (d.EscalateTo != "") {
		return &Error{Kind: ErrInvalid, Message: "To escalate, give both how long to wait and whom to give the round to."}
	}
	return s.execOne(ctx, "server "+name, `update servers set escalate_after = $2::interval, escalate_to = $3, on_expiry = $4
		where name = $1`, name, interval(d.EscalateAfter), orNil(d.EscalateTo), d.OnExpiry)
}

// scheduleDeadlinesTx schedules the jobs that carry out a new waiting
// round's plan, as its insert made it, in the round's own transaction.
func (s *Store) scheduleDeadlinesTx(ctx context.Context, tx *txn, callID string, seq int, expires time.Time, plan RoundPlan) error {
	var jobs []queue.Insert
	if plan.EscalateAt != nil {
		jobs = append(jobs, queue.Insert{Args: queue.EscalateArgs{CallID: callID, Seq: seq}, At: *plan.EscalateAt})
	}
	if plan.OnExpiry != OnExpiryExpire {
		jobs = append(jobs, queue.Insert{Args: queue.DeadlineArgs{CallID: callID, Seq: seq}, At: expires})
	}
	return s.enqueueJobs(ctx, tx, jobs...)
}

// RoundPlan is what will happen to a waiting round nobody answers.
type RoundPlan struct {
	OnExpiry    string     `db:"on_expiry"`
	EscalateAt  *time.Time `db:"escalate_at"`
	EscalateTo  *string    `db:"escalate_to"`
	EscalatedAt *time.Time `db:"escalated_at"`
	// EscalatedFrom is whom the round waited for before it escalated.
	EscalatedFrom *string `db:"escalated_from"`
}

// RoundPlan returns a round's plan.
func (s *Store) RoundPlan(ctx context.Context, callID string, seq int) (*RoundPlan, error) {
	rows, _ := s.pool.Query(ctx, `select on_expiry, escalate_at, escalate_to, escalated_at, escalated_from
		from rounds where call_id = $1 and seq = $2`, callID, seq)
	p, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[RoundPlan])
	return p, translate(err, "round")
}

// Escalated is a round given to someone else by its escalation. Why is
// set when it went to the admins' queue instead of the one its plan
// named (Planned), who may no longer answer.
type Escalated struct {
	From, To     string
	Planned, Why string
}

// Why an escalation went to the admins' queue instead of its plan's choice.
const (
	EscalateWhyDisabled    = "the person it was to go to is disabled"
	EscalateWhyTeamDeleted = "the team it was to go to was deleted"
)

// EscalateRound gives a round still waiting at its escalation time to the
// one its plan names, once however many jobs run: the people it now waits
// for are mailed, the call's webhook gets round.escalated, and the audit
// log says so, all in the same transaction. A plan naming a person
// disabled since, or a team deleted since, gives the round to the admins'
// queue (team:admins) instead, and the audit entry says why. It returns
// nil when there was nothing to do (answered, ended, already with them,
// or not yet due at now, the engine's time).
func (s *Store) EscalateRound(ctx context.Context, instance, callID string, seq int, now time.Time) (*Escalated, error) {
	var e *Escalated
	err := s.announcedTx(ctx, func(tx *txn) error {
		var from, to, planned string
		var why *string
		var expires time.Time
		var webhook bool
		err := tx.QueryRow(ctx, `
			with r as (
				select r.call_id, r.escalate_to, r.expires_at, c.assignee, gone.why,
				       case when gone.why is null then r.escalate_to else 'team:' || $3::text end as target
				from rounds r join calls c on c.id = r.call_id
				cross join lateral (select case
					when r.escalate_to like 'team:%' then
						case when not exists (select 1 from teams t where 'team:' || t.name = r.escalate_to) then $4::text end
					when not exists (select 1 from users u where u.name = r.escalate_to and not u.disabled) then $5::text
					end as why) gone
				where r.call_id = $1 and r.seq = $2 and r.status = 'pending' and r.escalated_at is null
				  and r.escalate_to is not null and r.escalate_at <= $6 and r.expires_at > $6
				  and c.current_seq = $2 and c.status = 'input_required'
				for update of r, c
			), due as (
				select * from r where r.assignee is distinct from r.target
			), marked as (
				update rounds set escalated_at = now(), escalated_from = due.assignee
				from due where rounds.call_id = due.call_id and rounds.seq = $2
			), moved as (
				update calls set assignee = due.target, updated_at = now() from due where calls.id = due.call_id
				returning calls.webhook_url is not null as webhook
			)
			select coalesce(due.assignee, ''), due.target, due.escalate_to, due.why, due.expires_at, moved.webhook from due, moved`,
			callID, seq, AdminsTeam, EscalateWhyTeamDeleted, EscalateWhyDisabled, now).
			Scan(&from, &to, &planned, &why, &expires, &webhook)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		e = &Escalated{From: from, To: to}
		detail := map[string]any{"seq": seq, "from": from, "to": to}
		if why != nil {
			// The admins' queue is made when it is first needed.
			if err := ensureAdminsTeamTx(ctx, tx); err != nil {
				return err
			}
			e.Planned, e.Why = planned, *why
			detail["planned"], detail["why"] = planned, *why
		}
		if s.reach.Mail {
			if err := s.mailRoundTx(ctx, tx, callID, seq, time.Now(), expires); err != nil {
				return err
			}
		}
		// Its old messages say where it went; the new assignee gets one.
		if err := s.slackEndedTx(ctx, tx, callID); err != nil {
			return err
		}
		if err := s.slackPostTx(ctx, tx, callID, seq); err != nil {
			return err
		}
		if webhook {
			if err := s.webhookTx(ctx, tx, callID, EventRoundEscalated); err != nil {
				return err
			}
		}
		return auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "system", Action: "round.escalated", Target: callID,
			Detail: detail})
	})
	return e, err
}

// DeadlineRound is what a deadline job reads: the call and its round, if
// the round still waits and its plan answers it at the deadline.
func (s *Store) DeadlineRound(ctx context.Context, callID string, seq int) (*Call, *Round, string, error) {
	call, err := s.Call(ctx, callID)
	if err != nil {
		return nil, nil, "", err
	}
	r, err := s.Round(ctx, callID, seq)
	if err != nil {
		return nil, nil, "", err
	}
	plan, err := s.RoundPlan(ctx, callID, seq)
	if err != nil {
		return nil, nil, "", err
	}
	return call, r, plan.OnExpiry, nil
}

// AnswerAtDeadline answers a round nobody answered with what its plan
// declares (responses, all declines or cancels), as a person's answer
// would be stored: the request that sends it is enqueued in the same
// transaction, or, with refusal set, the call ends with that message. The
// guarded update lets it happen once, never after someone answered, and
// not before the deadline by now, the engine's time. It reports whether
// it did.
func (s *Store) AnswerAtDeadline(ctx context.Context, instance, callID string, seq int, responses json.RawMessage, refusal string, now time.Time) (bool, error) {
	var done bool
	err := s.announcedTx(ctx, func(tx *txn) error {
		var onExpiry string
		err := tx.QueryRow(ctx, `update rounds set status = 'answered', responses = $3, answered_by = $4, answered_at = now()
			where call_id = $1 and seq = $2 and status = 'pending' and held_by is null and on_expiry <> 'expire'
			  and expires_at <= $5
			returning on_expiry`, callID, seq, responses, AnsweredAtDeadline, now).Scan(&onExpiry)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		status, message := CallQueued, (*string)(nil)
		if refusal != "" {
			status, message = CallCancelled, &refusal
		}
		tag, err := tx.Exec(ctx, `update calls set status = $3, error = $4, retryable = false, updated_at = now(),
			finished_at = case when $3 = 'cancelled' then now() end
			where id = $1 and current_seq = $2 and status = 'input_required'`, callID, seq, status, message)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return conflict("%s", NotWaitingMessage)
		}
		if _, err := tx.Exec(ctx, `delete from drafts where call_id = $1 and seq = $2`, callID, seq); err != nil {
			return err
		}
		action := map[string]string{OnExpiryDecline: "round.declined_at_deadline", OnExpiryCancel: "round.cancelled_at_deadline"}[onExpiry]
		if err := auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "system", Action: action,
			Target: callID, Detail: map[string]any{"seq": seq}}); err != nil {
			return err
		}
		done = true
		if refusal != "" {
			return s.callFinishedTx(ctx, tx, callID)
		}
		if err := s.slackEndedTx(ctx, tx, callID); err != nil {
			return err
		}
		return s.enqueueTx(ctx, tx, nil, callID, seq)
	})
	return done, err
}

// AnsweredAtDeadline is who answered a round its plan answered at the
// deadline.
const AnsweredAtDeadline = "rounds (at the deadline)"
