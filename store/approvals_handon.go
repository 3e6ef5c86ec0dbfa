package store

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ApprovalHandOver is an approval handed on by an admin from a person asked to
// another.
type ApprovalHandOver struct {
	From string    `db:"from_name"`
	To   string    `db:"to_name"`
	By   string    `db:"by_name"`
	At   time.Time `db:"at"`
}

// ApprovalHandOn is an admin's handing on of a call's approval.
type ApprovalHandOn struct {
	Call, From, To, By string
	// Audit is written in its transaction: its Action, Target and Actor
	// are the store's to fill.
	Audit AuditEntry
}

// Sentences said to a hand-on refused.
const (
	HandOnAdminsMessage  = "Only an admin may hand an approval on to someone else."
	HandOnDecidedMessage = "They have already decided on this approval: it cannot be handed on from them."
)

// HandOnApproval replaces From, a person asked who has not decided, with
// To among those asked of a waiting approval, in one transaction that
// locks its row. Only an admin may (ErrForbidden); an approval ended, or
// From having decided, is ErrConflict; To unknown, disabled, already asked
// or the caller, or From not asked, is ErrInvalid. To is mailed, the
// hand-on kept with the approval and the audit log says
// approval.handed_on, naming both.
func (s *Store) HandOnApproval(ctx context.Context, h ApprovalHandOn) (*Approval, error) {
	if !isUUID(h.Call) {
		return nil, notFound("approval")
	}
	err := s.announcedTx(ctx, func(tx *txn) error {
		var admin bool
		if err := tx.QueryRow(ctx, `select exists (select 1 from users where name = $1 and is_admin and not disabled)`,
			h.By).Scan(&admin); err != nil {
			return err
		}
		if !admin {
			return forbidden(HandOnAdminsMessage)
		}
		rows, _ := tx.Query(ctx, `select `+approvalColumns+` from approvals where call_id = $1 for update`, h.Call)
		a, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Approval])
		if err != nil {
			return translate(err, "approval")
		}
		if a.State != ApprovalWaiting {
			return conflict(ApprovalEndedMessage)
		}
		if err := s.checkHandOnTx(ctx, tx, a, h); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update approvals set
			asked = (select array_agg(n order by n) from unnest(array_remove(asked, $2) || $3::text) n),
			ask = case when $3 = any(ask) then ask else ask || $3 end where call_id = $1`, h.Call, h.From, h.To); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `insert into approval_handovers (call_id, from_name, to_name, by_name)
			values ($1, $2, $3, $4)`, h.Call, h.From, h.To, h.By); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update calls set updated_at = now() where id = $1`, h.Call); err != nil {
			return err
		}
		if err := s.mailApprovalTx(ctx, tx, h.Call, []string{h.To}, a.Caller); err != nil {
			return err
		}
		if err := s.webhookTx(ctx, tx, h.Call, EventRoundHandedOn); err != nil {
			return err
		}
		entry := h.Audit
		entry.Actor, entry.Action, entry.Target = h.By, "approval.handed_on", h.Call
		entry.Detail = map[string]any{"from": h.From, "to": h.To}
		return auditTx(ctx, tx, entry)
	})
	if err != nil {
		return nil, err
	}
	return s.approvalTx(ctx, s.pool, h.Call)
}

// checkHandOnTx checks a hand-on of a (locked): From asked and not
// decided, To an enabled person not asked and not the caller.
func (s *Store) checkHandOnTx(ctx context.Context, tx *txn, a *Approval, h ApprovalHandOn) error {
	if !slices.Contains(a.Asked, h.From) || h.From == a.Caller {
		return invalid(h.From + " is not among the people asked to decide on this call.")
	}
	var decided bool
	if err := tx.QueryRow(ctx, `select exists (select 1 from approval_decisions where call_id = $1 and for_name = $2)`,
		a.CallID, h.From).Scan(&decided); err != nil {
		return err
	}
	if decided {
		return conflict(HandOnDecidedMessage)
	}
	switch {
	case h.To == "":
		return invalid("Say whom to hand it on to.")
	case h.To == a.Caller:
		return invalid(h.To + " started this call: nobody decides on their own call.")
	case slices.Contains(a.Asked, h.To):
		return invalid(h.To + " is already asked to decide on this call.")
	}
	var enabled *bool
	err := tx.QueryRow(ctx, `select not disabled from users where name = $1`, h.To).Scan(&enabled)
	if err != nil && err != pgx.ErrNoRows {
		return err
	}
	if enabled == nil {
		return invalid("There is no account named " + h.To + ".")
	}
	if !*enabled {
		return invalid(h.To + "'s account is disabled: they cannot decide.")
	}
	return nil
}

func invalid(msg string) error { return &Error{Kind: ErrInvalid, Message: msg} }
