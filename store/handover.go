package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// EventRoundHandedOn is the webhook event of a waiting round a person gave
// to someone else (HandOn).
const EventRoundHandedOn = "round.handed_on"

// URLModeHandOnMessage says why a URL-mode question is never handed on.
const URLModeHandOnMessage = "This question opens a page that the person who started the call must complete " +
	"themselves (the protocol requires it), so it cannot be handed on."

// HandOver is a waiting round given to someone else.
type HandOver struct {
	CallID string
	Seq    int
	// To is whom the round goes to: a person, or team:NAME.
	To string
	// By is who hands it on.
	By string
	// Check decides whether By may hand it on, from what the transaction
	// read; its error rolls back and is returned as it is.
	Check func(HandingOn) error
	// Audit is the entry to record (its Detail is filled in here).
	Audit AuditEntry
}

// HandingOn is what HandOn reads for its Check: the call, its round,
// whether By is whom the call's rounds are assigned to (or a member of
// that team), and the person away By stands in for, if any. A URL-mode
// question is refused after the Check, whoever asks.
type HandingOn struct {
	Call       *Call
	Round      *Round
	Assigned   bool
	Delegating string
}

// HandOn gives waiting round h.Seq of a call to h.To, recording whom it
// was asked of, whom it went to, who gave it and when, on the round and in
// the audit log, in one transaction with the mail to whom it now waits for
// and the call's webhook event. The call's later rounds go to h.To too. A
// round that asks the owner (a URL-mode question) is never handed on.
func (s *Store) HandOn(ctx context.Context, h HandOver) (*Call, error) {
	var call *Call
	err := s.announcedTx(ctx, func(tx *txn) error {
		at, err := s.handingOnTx(ctx, tx, h)
		if err != nil {
			return err
		}
		// Who may not hand it on learns nothing of the round's state.
		if err := h.Check(*at); err != nil {
			return err
		}
		if err := at.refused(h.To); err != nil {
			return err
		}
		if err := checkAssignee(ctx, tx, h.To); err != nil {
			return err
		}
		call, err = s.handOnTx(ctx, tx, h, at)
		return err
	})
	if err != nil {
		return nil, err
	}
	return call, nil
}

// handingOnTx reads the call and its round, locked, and who h.By is to
// them.
func (s *Store) handingOnTx(ctx context.Context, tx *txn, h HandOver) (*HandingOn, error) {
	rows, _ := tx.Query(ctx, `select `+callColumns+` from calls c join servers s on s.id = c.server_id
		where c.id = $1 for update of c`, h.CallID)
	call, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
	if err != nil {
		return nil, translate(err, "call")
	}
	rows, _ = tx.Query(ctx, `select `+roundColumnsNow+` from rounds where call_id = $1 and seq = $2 for update`, h.CallID, h.Seq)
	r, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Round])
	if err != nil {
		return nil, translate(err, "round")
	}
	var member bool
	var delegating string
	if err := tx.QueryRow(ctx, `select call_team_member($1, $2), (`+delegatingSQL+`)`, h.CallID, h.By).
		Scan(&member, &delegating); err != nil {
		return nil, err
	}
	return &HandingOn{Call: call, Round: r, Assigned: call.Assignee != nil && assigned(*call.Assignee, h.By, member),
		Delegating: delegating}, nil
}

// refused says why the round cannot go to to: it no longer waits, it is a
// URL-mode question, or it is with them already.
func (at *HandingOn) refused(to string) error {
	call, r := at.Call, at.Round
	switch {
	case r.Status != RoundPending || call.CurrentSeq != r.Seq || call.Status != CallInputRequired:
		return conflict("This round is no longer waiting, so it cannot be handed on.")
	case r.AsksURL():
		return conflict("%s", URLModeHandOnMessage)
	case AskedOf(call) == to:
		return conflict("This round is already with %s.", to)
	}
	return nil
}

// handOnTx moves the call's rounds to h.To and records the hand-over.
func (s *Store) handOnTx(ctx context.Context, tx *txn, h HandOver, at *HandingOn) (*Call, error) {
	from := AskedOf(at.Call)
	var webhook bool
	err := tx.QueryRow(ctx, `update calls set assignee = $3, updated_at = now()
		where id = $1 and current_seq = $2 and status = 'input_required'
		returning webhook_url is not null`, h.CallID, h.Seq, h.To).Scan(&webhook)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, conflict("This round is no longer waiting, so it cannot be handed on.")
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `update rounds set handed_from = $3, handed_to = $4, handed_by = $5, handed_at = now()
		where call_id = $1 and seq = $2`, h.CallID, h.Seq, from, h.To, h.By); err != nil {
		return nil, err
	}
	if s.reach.Mail {
		if err := s.mailRoundTx(ctx, tx, h.CallID, h.Seq, time.Now(), at.Round.ExpiresAt); err != nil {
			return nil, err
		}
	}
	if webhook {
		if err := s.webhookTx(ctx, tx, h.CallID, EventRoundHandedOn); err != nil {
			return nil, err
		}
	}
	e := h.Audit
	e.Detail = map[string]any{"seq": h.Seq, "server": at.Call.ServerName, "from": from, "to": h.To}
	if at.Delegating != "" {
		e.Detail["for"] = at.Delegating
	}
	if err := auditTx(ctx, tx, e); err != nil {
		return nil, err
	}
	call := *at.Call
	call.Assignee, call.UpdatedAt = &h.To, time.Now()
	return &call, nil
}

// AsksURL says whether the round asks a URL-mode question, which the
// person who started the call completes: it is never handed on, nor
// answered by a delegate. A round whose questions cannot be read counts
// as one.
func (r *Round) AsksURL() bool {
	if r.Asks != nil && *r.Asks == AsksOwner {
		return true
	}
	qs, err := mcpclient.ParseQuestions(r.InputRequests)
	if err != nil {
		return true
	}
	for _, q := range qs {
		if q.Kind == mcpclient.KindURL {
			return true
		}
	}
	return false
}
