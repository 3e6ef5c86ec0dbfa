package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// Events posted to a call's webhook.
const (
	EventRoundWaiting = "round.waiting"
	EventCallFinished = "call.finished"
)

// ReachOptions say how the store tells people about calls.
type ReachOptions struct {
	// Mail is on when an SMTP server is configured: a pending round then
	// enqueues a mail to each person it waits for.
	Mail bool
	// CallJSON renders a call the way the API shows it, for the body of a
	// webhook event. Without it no webhook is posted.
	CallJSON func(*Call, []Round) (json.RawMessage, error)
}

// roundWaitingTx tells the people a new pending round waits for, in the
// round's own transaction, and schedules the jobs of its plan (nil for a
// question held on a session, which its holder ends): a mail job for each
// (with its reminder) when mail is on, and a round.waiting event when the
// call has a webhook.
func (s *Store) roundWaitingTx(ctx context.Context, tx *txn, callID string, seq int, expires time.Time, webhook bool, plan *RoundPlan) error {
	if plan != nil {
		if err := s.scheduleDeadlinesTx(ctx, tx, callID, seq, expires, *plan); err != nil {
			return err
		}
	}
	if s.reach.Mail {
		if err := s.mailRoundTx(ctx, tx, callID, seq, time.Now(), expires); err != nil {
			return err
		}
	}
	if webhook {
		return s.webhookTx(ctx, tx, callID, EventRoundWaiting)
	}
	return nil
}

// callFinishedTx posts call.finished to the call's webhook, if it has one,
// in the transaction that ends the call.
func (s *Store) callFinishedTx(ctx context.Context, tx *txn, callID string) error {
	return s.webhookTx(ctx, tx, callID, EventCallFinished)
}

// mailRoundTx enqueues a mail to each person round seq waits for who has an
// address and wants mail (the owner alone for a round that asks the owner,
// nobody for one that asks the agent; the delegate of a person away in
// their place), and a reminder for when a quarter of its time is
// left.
func (s *Store) mailRoundTx(ctx context.Context, tx *txn, callID string, seq int, created, expires time.Time) error {
	rows, _ := tx.Query(ctx, `
		select u.name from calls c join rounds r on r.call_id = c.id and r.seq = c.current_seq join users u
		  on (r.asks = 'owner' and u.name = c.owner)
		  or (r.asks is null and ((u.name = coalesce(c.assignee, c.owner)
		      and not (u.away_until > now() and u.away_delegate is not null))
		  or u.name = (select p.away_delegate from users p
		      where p.name = coalesce(c.assignee, c.owner) and p.away_until > now())
		  or (c.assignee like 'team:%' and u.id in (
		      select m.user_id from team_members m join teams t on t.id = m.team_id
		      where t.name = substr(c.assignee, 6)))))
		where c.id = $1 and u.email <> '' and u.email_rounds and not u.disabled`, callID)
	people, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(people) == 0 {
		return err
	}
	remindAt := expires.Add(-expires.Sub(created) / 4)
	var jobs []queue.Insert
	for _, p := range people {
		jobs = append(jobs, queue.Insert{Args: queue.MailArgs{CallID: callID, Seq: seq, Recipient: p, Mail: queue.MailWaiting}})
		// A round given to someone when less than a quarter of its time is
		// left gets one mail, which says the deadline, not two at once.
		if remindAt.After(time.Now()) {
			jobs = append(jobs, queue.Insert{Args: queue.MailArgs{CallID: callID, Seq: seq, Recipient: p, Mail: queue.MailReminder},
				At: remindAt})
		}
	}
	return s.enqueueJobs(ctx, tx, jobs...)
}

// webhookTx stores an event about the call as it is now, with an id of its
// own, and enqueues its delivery; a call without a webhook gets none.
func (s *Store) webhookTx(ctx context.Context, tx *txn, callID, event string) error {
	if s.reach.CallJSON == nil {
		return nil
	}
	rows, _ := tx.Query(ctx, `select `+callColumns+`
		from calls c join servers s on s.id = c.server_id where c.id = $1 and c.webhook_url is not null`, callID)
	call, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	rows, _ = tx.Query(ctx, `select `+roundColumns+` from rounds where call_id = $1 and seq >= $2 order by seq`,
		callID, call.CurrentSeq)
	rounds, err := pgx.CollectRows(rows, pgx.RowToStructByName[Round])
	if err != nil {
		return err
	}
	if call.Approval, err = s.approvalTx(ctx, tx, callID); errors.Is(err, ErrNotFound) {
		call.Approval = nil
	} else if err != nil {
		return err
	}
	callJSON, err := s.reach.CallJSON(call, rounds)
	if err != nil {
		return err
	}
	// Built by hand so that the call's JSON stays byte for byte as rendered.
	body := append(append([]byte(`{"type":"`+event+`","call":`), callJSON...), '}')
	id := newDeliveryID()
	if _, err := tx.Exec(ctx, `insert into webhook_deliveries (id, call_id, type, url, signer, body)
		values ($1, $2, $3, $4, $5, $6)`, id, callID, event, *call.WebhookURL, call.Owner, body); err != nil {
		return err
	}
	return s.enqueueJobs(ctx, tx, queue.Insert{Args: queue.WebhookArgs{DeliveryID: id}})
}

// newDeliveryID makes a webhook-id: "msg_" and 26 random characters.
func newDeliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
