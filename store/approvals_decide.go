package store

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ApprovalDecision is a person's decision on a call's approval.
type ApprovalDecision struct {
	Call string
	By   string
	// Decision is DecisionApprove or DecisionDecline.
	Decision string
	// Arguments, when set, are what the person approves instead of the
	// arguments asked (an approval only); Reason says why (optional).
	Arguments json.RawMessage
	Reason    string
	// SendAfter, when set, has the caller send the first request of an
	// approved call at once (see Direct); the engine's to set.
	SendAfter time.Duration
	// Audit is written in the decision's transaction: its Action and
	// Target are the store's to fill.
	Audit AuditEntry
	// MailLink, when set, is the hash of the mail's links the decision
	// was made with: they are marked used in its transaction, and a
	// decision with links used already stores nothing (ErrConflict).
	MailLink []byte
}

// Decided is what a decision did: the approval as it is now, and the
// first request of a call it approved, when the caller sends it.
type Decided struct {
	Approval *Approval
	Direct   *Direct
}

// Sentences said to a decision refused.
const (
	OwnCallMessage   = "You cannot decide on the approval of your own call: someone else asked must."
	NotAskedMessage  = "You are not among the people asked to decide on this call."
	SameTwiceMessage = "You have already approved these arguments."
)

// Decide records d in one transaction that locks the approval's row, so
// that of decisions at once on any instances each sees those before it:
// exactly Needs approvals of the final arguments are counted. A decline
// ends the approval at once; an approval with other arguments starts the
// count again; the last approval needed queues the call with the approved
// arguments and enqueues its first request; an approval the people left
// can no longer reach ends declined. The caller, and anyone not asked
// (nor deciding for someone asked), is refused (ErrForbidden); a decision
// after the end is ErrConflict.
func (s *Store) Decide(ctx context.Context, d ApprovalDecision) (*Decided, error) {
	if !isUUID(d.Call) {
		return nil, notFound("approval")
	}
	var out Decided
	err := s.announcedTx(ctx, func(tx *txn) error {
		rows, _ := tx.Query(ctx, `select `+approvalColumns+` from approvals where call_id = $1 for update`, d.Call)
		a, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Approval])
		if err != nil {
			return translate(err, "approval")
		}
		if a.State != ApprovalWaiting {
			return conflict(ApprovalEndedMessage)
		}
		if d.By == a.Caller {
			return forbidden(OwnCallMessage)
		}
		forName, err := s.decidesForTx(ctx, tx, a, d.By)
		if err != nil {
			return err
		}
		if d.MailLink != nil {
			if err := useMailLinkTx(ctx, tx, d.MailLink); err != nil {
				return err
			}
		}
		out.Direct, err = s.decideTx(ctx, tx, a, d, forName)
		return err
	})
	if err != nil {
		return nil, err
	}
	out.Approval, err = s.approvalTx(ctx, s.pool, d.Call)
	return &out, err
}

// decidesForTx says for whom person by may decide on a: themselves when
// they are asked and may still decide (not disabled, named or still a
// member of a team named); else the person asked who is away with by as
// their delegate (ActingFor, one step), who may still decide. It is the
// one place that says who may decide for whom.
func (s *Store) decidesForTx(ctx context.Context, tx *txn, a *Approval, by string) (string, error) {
	asked := slices.DeleteFunc(slices.Clone(a.Asked), func(n string) bool { return n == a.Caller })
	forName, ok, err := actingFor(ctx, tx, by, asked, time.Now())
	if err != nil {
		return "", err
	}
	var may bool
	if ok {
		err = tx.QueryRow(ctx, `select exists (select 1 from users u where u.name = $1 and not u.disabled
			and ($1 = any($2::text[]) or exists (select 1 from team_members m
			join teams t on t.id = m.team_id where m.user_id = u.id and 'team:' || t.name = any($2::text[]))))`,
			forName, a.Ask).Scan(&may)
	}
	if err != nil {
		return "", err
	}
	if !may {
		return "", forbidden(NotAskedMessage)
	}
	return forName, nil
}

// decideTx stores d, made for forName, on a (locked), and ends a when it
// is decided.
func (s *Store) decideTx(ctx context.Context, tx *txn, a *Approval, d ApprovalDecision, forName string) (*Direct, error) {
	entry := d.Audit
	entry.Actor, entry.Target = d.By, a.CallID
	detail := map[string]any{"for": forName, "decision": d.Decision}
	if d.MailLink != nil {
		detail["mail_link"] = true // decided with a mail's link
	}
	if d.Reason != "" {
		detail["reason"] = d.Reason
	}
	entry.Detail = detail
	if d.Decision == DecisionDecline {
		entry.Action = "approval.declined"
		if err := s.insertDecisionTx(ctx, tx, a, d, forName, nil, entry); err != nil {
			return nil, err
		}
		return nil, s.endApprovalTx(ctx, tx, a.CallID, ApprovalDeclined, DeclinedMessage(d.By, forName, d.Reason), nil)
	}
	args := a.Arguments
	if len(d.Arguments) > 0 && !sameJSON(d.Arguments, a.Arguments) {
		args = d.Arguments
		a.Epoch++
		detail["arguments_changed"] = true
		if _, err := tx.Exec(ctx, `update approvals set arguments = $2, epoch = $3 where call_id = $1`,
			a.CallID, args, a.Epoch); err != nil {
			return nil, err
		}
	} else {
		var again bool
		if err := tx.QueryRow(ctx, `select exists (select 1 from approval_decisions where call_id = $1
			and for_name = $2 and decision = 'approve' and epoch = $3)`, a.CallID, forName, a.Epoch).Scan(&again); err != nil {
			return nil, err
		}
		if again {
			return nil, conflictAgain()
		}
	}
	entry.Action = "approval.approved"
	if err := s.insertDecisionTx(ctx, tx, a, d, forName, args, entry); err != nil {
		return nil, err
	}
	var counted int
	if err := tx.QueryRow(ctx, `select count(distinct for_name) from approval_decisions
		where call_id = $1 and decision = 'approve' and epoch = $2`, a.CallID, a.Epoch).Scan(&counted); err != nil {
		return nil, err
	}
	if counted >= a.Needs {
		direct := newDirect(d.SendAfter)
		if err := s.endApprovalTx(ctx, tx, a.CallID, ApprovalApproved, "", direct); err != nil {
			return nil, err
		}
		return direct.sent(), nil
	}
	left, err := approvalReachableTx(ctx, tx, a.CallID)
	if err != nil || left {
		return nil, err
	}
	return nil, s.endApprovalTx(ctx, tx, a.CallID, ApprovalDeclined, QuorumOutOfReach(a.Needs), nil)
}

// conflictAgain is an approval given twice for the same arguments.
func conflictAgain() error { return &Error{Kind: ErrInvalid, Message: SameTwiceMessage} }

// insertDecisionTx stores a decision and its audit entry, and marks the
// call changed, so that those watching it hear of the decision.
func (s *Store) insertDecisionTx(ctx context.Context, tx *txn, a *Approval, d ApprovalDecision, forName string,
	args json.RawMessage, entry AuditEntry) error {
	if _, err := tx.Exec(ctx, `insert into approval_decisions (call_id, by_name, for_name, decision, arguments, reason, epoch)
		values ($1, $2, $3, $4, $5, $6, $7)`, a.CallID, d.By, forName, d.Decision, args, d.Reason, a.Epoch); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `update calls set updated_at = now() where id = $1`, a.CallID); err != nil {
		return err
	}
	return auditTx(ctx, tx, entry)
}

// DeclinedMessage is the sentence a declined call fails with.
func DeclinedMessage(by, forName, reason string) string {
	who := by
	if forName != "" && forName != by {
		who = by + " (for " + forName + ")"
	}
	msg := "Declined by " + who + "."
	if reason != "" {
		msg = "Declined by " + who + ": " + reason
	}
	return msg
}

// approvalTx reads a's approval with its decisions on q.
func (s *Store) approvalTx(ctx context.Context, q reader, callID string) (*Approval, error) {
	rows, _ := q.Query(ctx, `select `+approvalColumns+` from approvals where call_id = $1`, callID)
	a, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Approval])
	if err != nil {
		return nil, translate(err, "approval")
	}
	rows, _ = q.Query(ctx, `select `+decisionColumns+` from approval_decisions where call_id = $1 order by id`, callID)
	if a.Decisions, err = pgx.CollectRows(rows, pgx.RowToStructByName[DecisionMade]); err != nil {
		return nil, err
	}
	rows, _ = q.Query(ctx, `select from_name, to_name, by_name, at from approval_handovers where call_id = $1 order by id`, callID)
	a.HandedOn, err = pgx.CollectRows(rows, pgx.RowToStructByName[ApprovalHandOver])
	return a, err
}

// sameJSON says whether two JSON values are equal, whatever their keys'
// order and spacing.
func sameJSON(x, y json.RawMessage) bool {
	if bytes.Equal(x, y) {
		return true
	}
	var a, b any
	if json.Unmarshal(x, &a) != nil || json.Unmarshal(y, &b) != nil {
		return false
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// ExpireDueApprovals ends declined the approvals still waiting past their
// deadline, each in its own guarded transaction; it returns their calls.
func (s *Store) ExpireDueApprovals(ctx context.Context) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `select call_id::text from approvals where state = 'waiting' and expires_at <= now() limit 100`)
	due, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var ended []string
	for _, id := range due {
		err := s.announcedTx(ctx, func(tx *txn) error {
			var state string
			if err := tx.QueryRow(ctx, `select state from approvals where call_id = $1 for update`, id).Scan(&state); err != nil {
				return err
			}
			if state != ApprovalWaiting {
				return nil
			}
			ended = append(ended, id)
			return s.endApprovalTx(ctx, tx, id, ApprovalDeclined, ApprovalExpiredMessage, nil)
		})
		if err != nil {
			return ended, err
		}
	}
	return slices.Clip(ended), nil
}

// ApprovalExpiredMessage is what a call whose approval nobody decided in
// time fails with.
const ApprovalExpiredMessage = "Declined: nobody decided on the approval before its deadline."
