package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// planApprovalEscalationTx gives a new approval the escalation its call
// or its server sets (escalate_after, escalate_to), as a round gets it,
// and schedules the job that carries it out, in the approval's own
// transaction. An escalation due only after the deadline is none.
func (s *Store) planApprovalEscalationTx(ctx context.Context, tx *txn, callID string) error {
	var at *time.Time
	err := tx.QueryRow(ctx, `
		update approvals a set escalate_at = p.at, escalate_to = p.target
		from (select now() + coalesce(d.escalate_after, s.escalate_after) as at, coalesce(d.escalate_to, s.escalate_to) as target
		      from calls c join servers s on s.id = c.server_id left join call_deadlines d on d.call_id = c.id
		      where c.id = $1) p
		where a.call_id = $1 and p.target is not null and p.at is not null and p.at < a.expires_at
		returning a.escalate_at`, callID).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) || at == nil {
		return nil
	}
	if err != nil {
		return err
	}
	return s.enqueueJobs(ctx, tx, queue.Insert{Args: queue.EscalateArgs{CallID: callID, Seq: ApprovalSeq}, At: *at})
}

// ApprovalEscalated is what an approval's escalation did: To is whom it
// went to (its plan's target, or team:admins when that one is gone, Why
// saying so), Added the people now asked who were not before.
type ApprovalEscalated struct {
	To, Planned, Why string
	Added            []string
}

// ApprovalEscalateAt returns when call's approval escalates: nil when it
// has no escalation or it happened. ErrNotFound when there is no approval.
func (s *Store) ApprovalEscalateAt(ctx context.Context, callID string) (*time.Time, error) {
	var at *time.Time
	err := s.pool.QueryRow(ctx, `select escalate_at from approvals where call_id = $1 and escalated_at is null`,
		callID).Scan(&at)
	return at, translate(err, "approval")
}

// EscalateApproval adds the escalation's target to an approval still
// waiting at its escalation time, once however many jobs run: the
// approval's row is locked, and one marked escalated is left alone. The
// target (a person, or the members of team:NAME, each once, never the
// caller) joins those asked; the needs stay as they were. The people added
// are mailed, the call's webhook gets round.escalated with the call, and
// the audit log says approval.escalated, in the same transaction. A target
// disabled or deleted since gives it to the admins' queue, as a round's
// escalation does. It returns nil when there was nothing to do.
func (s *Store) EscalateApproval(ctx context.Context, instance, callID string, now time.Time) (*ApprovalEscalated, error) {
	var out *ApprovalEscalated
	err := s.announcedTx(ctx, func(tx *txn) error {
		var planned, why *string
		var asked []string
		var caller string
		err := tx.QueryRow(ctx, `
			select a.escalate_to, a.asked, a.caller, case
				when a.escalate_to like 'team:%' then
					case when not exists (select 1 from teams t where 'team:' || t.name = a.escalate_to) then $3::text end
				when not exists (select 1 from users u where u.name = a.escalate_to and not u.disabled) then $4::text
				end
			from approvals a join calls c on c.id = a.call_id
			where a.call_id = $1 and a.state = 'waiting' and a.escalated_at is null and a.escalate_to is not null
			  and a.escalate_at <= $2 and a.expires_at > $2 and c.status = 'approval_required'
			for update of a`, callID, now, EscalateWhyTeamDeleted, EscalateWhyDisabled).Scan(&planned, &asked, &caller, &why)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		out = &ApprovalEscalated{To: *planned}
		detail := map[string]any{"to": *planned}
		if why != nil {
			if err := ensureAdminsTeamTx(ctx, tx); err != nil {
				return err
			}
			out.To, out.Planned, out.Why = "team:"+AdminsTeam, *planned, *why
			detail["to"], detail["planned"], detail["why"] = out.To, *planned, *why
		}
		rows, _ := tx.Query(ctx, `
			select u.name from users u where u.name = $1 and not u.disabled
			union
			select u.name from team_members m join teams t on t.id = m.team_id join users u on u.id = m.user_id
			where 'team:' || t.name = $1 and not u.disabled
			order by 1`, out.To)
		people, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, p := range people {
			if p != caller && !slices.Contains(asked, p) {
				out.Added = append(out.Added, p)
			}
		}
		detail["added"] = out.Added
		if _, err := tx.Exec(ctx, `update approvals set escalated_at = now(),
			asked = (select coalesce(array_agg(distinct n order by n), '{}') from unnest(asked || $2::text[]) n),
			ask = case when $3 = any(ask) then ask else ask || $3 end
			where call_id = $1`, callID, out.Added, out.To); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update calls set updated_at = now() where id = $1`, callID); err != nil {
			return err
		}
		if err := s.mailApprovalTx(ctx, tx, callID, out.Added, caller); err != nil {
			return err
		}
		if err := s.webhookTx(ctx, tx, callID, EventRoundEscalated); err != nil {
			return err
		}
		return auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "system", Action: "approval.escalated",
			Target: callID, Detail: detail})
	})
	return out, err
}

// mailApprovalTx mails the approval of a call to people, those of them
// with an address who want round mail, never the caller.
func (s *Store) mailApprovalTx(ctx context.Context, tx *txn, callID string, people []string, caller string) error {
	if !s.reach.Mail || len(people) == 0 {
		return nil
	}
	rows, _ := tx.Query(ctx, `select name from users where name = any($1) and name <> $2
		and email <> '' and email_rounds and not disabled order by name`, people, caller)
	to, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	var jobs []queue.Insert
	for _, p := range to {
		jobs = append(jobs, queue.Insert{Args: queue.MailArgs{CallID: callID, Seq: ApprovalSeq, Recipient: p, Mail: queue.MailWaiting}})
	}
	return s.enqueueJobs(ctx, tx, jobs...)
}
