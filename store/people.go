package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/mail"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// Contact is how a person is reached: their e-mail address, and whether
// they want mail about the rounds that wait for them.
type Contact struct {
	Name        string `db:"name"`
	Email       string `db:"email"`
	EmailRounds bool   `db:"email_rounds"`
}

// Contact returns a user's contact settings.
func (s *Store) Contact(ctx context.Context, user string) (*Contact, error) {
	rows, _ := s.pool.Query(ctx, `select name, email, email_rounds from users where name = $1`, user)
	c, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Contact])
	return c, translate(err, "user "+user)
}

// Contacts returns every user's contact settings, by name.
func (s *Store) Contacts(ctx context.Context) (map[string]Contact, error) {
	all, err := readRows[Contact](ctx, s, `select name, email, email_rounds from users`)
	out := make(map[string]Contact, len(all))
	for _, c := range all {
		out[c.Name] = c
	}
	return out, err
}

// CheckEmail checks an e-mail address a person typed: one plain address,
// no name, no control characters. Empty is allowed: no mail.
func CheckEmail(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", nil
	}
	bad := &Error{Kind: ErrInvalid, Message: "Give one e-mail address, such as ada@example.com."}
	if len(addr) > 254 || strings.ContainsFunc(addr, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' }) {
		return "", bad
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Name != "" || a.Address != addr {
		return "", bad
	}
	return addr, nil
}

// SetEmail sets a user's e-mail address; empty removes it.
func (s *Store) SetEmail(ctx context.Context, user, email string) error {
	email, err := CheckEmail(email)
	if err != nil {
		return err
	}
	return s.execOne(ctx, "user "+user, `update users set email = $2, updated_at = now() where name = $1`, user, email)
}

// SetContact sets a user's address and whether they want round mail.
func (s *Store) SetContact(ctx context.Context, user, email string, rounds bool) error {
	email, err := CheckEmail(email)
	if err != nil {
		return err
	}
	return s.execOne(ctx, "user "+user, `update users set email = $2, email_rounds = $3, updated_at = now()
		where name = $1`, user, email, rounds)
}

// WebhookSecret returns the secret a user's webhook events are signed
// with, making it on first use. It is kept encrypted like server
// credentials.
func (s *Store) WebhookSecret(ctx context.Context, user string) ([]byte, error) {
	var enc []byte
	err := s.pool.QueryRow(ctx, `select webhook_secret_enc from users where name = $1`, user).Scan(&enc)
	if err != nil {
		return nil, translate(err, "user "+user)
	}
	if enc == nil {
		return s.newWebhookSecret(ctx, user, false)
	}
	return s.openSecret(enc, user)
}

// RotateWebhookSecret replaces a user's webhook secret; events not yet
// delivered are signed with the new one.
func (s *Store) RotateWebhookSecret(ctx context.Context, user string) ([]byte, error) {
	return s.newWebhookSecret(ctx, user, true)
}

func (s *Store) newWebhookSecret(ctx context.Context, user string, replace bool) ([]byte, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	enc, err := s.sealSecret(secret, user)
	if err != nil {
		return nil, err
	}
	// Two instances making one at once agree on whichever was stored first.
	q := `update users set webhook_secret_enc = coalesce(webhook_secret_enc, $2) where name = $1 returning webhook_secret_enc`
	if replace {
		q = `update users set webhook_secret_enc = $2 where name = $1 returning webhook_secret_enc`
	}
	if err := s.pool.QueryRow(ctx, q, user, enc).Scan(&enc); err != nil {
		return nil, translate(err, "user "+user)
	}
	return s.openSecret(enc, user)
}

func (s *Store) sealSecret(secret []byte, user string) ([]byte, error) {
	if s.aead == nil {
		return nil, errors.New("no credentials key is set")
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, secret, []byte("webhook:"+user)), nil
}

func (s *Store) openSecret(enc []byte, user string) ([]byte, error) {
	if s.aead == nil || len(enc) < s.aead.NonceSize() {
		return nil, errors.New("the webhook secret cannot be read")
	}
	n := s.aead.NonceSize()
	return s.aead.Open(nil, enc[:n], enc[n:], []byte("webhook:"+user))
}

// ReassignCall gives a waiting call's rounds to someone else, as an admin:
// the new assignee is mailed about the waiting round (in the same
// transaction) and the audit entry is written with it.
func (s *Store) ReassignCall(ctx context.Context, callID, assignee string, entry AuditEntry) error {
	if err := s.CheckAssignee(ctx, assignee); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *txn) error {
		var seq int
		var created, expires time.Time
		err := tx.QueryRow(ctx, `
			with c as (
				update calls set assignee = $2, updated_at = now()
				where id = $1 and status = 'input_required' returning id, current_seq
			)
			select c.current_seq, r.created_at, r.expires_at from c join rounds r on r.call_id = c.id and r.seq = c.current_seq`,
			callID, assignee).Scan(&seq, &created, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return conflict("Only a call waiting for answers can be reassigned.")
		}
		if err != nil {
			return err
		}
		if s.reach.Mail {
			if err := s.mailRoundTx(ctx, tx, callID, seq, created, expires); err != nil {
				return err
			}
		}
		return auditTx(ctx, tx, entry)
	})
}

// RoundMail is what a round's mail says, and to whom.
type RoundMail struct {
	Email         string          `db:"email"`
	Server        string          `db:"server"`
	Method        string          `db:"method"`
	Target        string          `db:"target"`
	Owner         string          `db:"owner"`
	InputRequests json.RawMessage `db:"input_requests"`
	ExpiresAt     time.Time       `db:"expires_at"`
}

// RoundMail returns what a mail about round seq to recipient says, or
// ErrNotFound when there is none to send: the round is no longer waiting,
// it waits for someone else now, or the person has no address or wants no
// mail.
func (s *Store) RoundMail(ctx context.Context, callID string, seq int, recipient string) (*RoundMail, error) {
	rows, _ := s.pool.Query(ctx, `
		select u.email, s.name as server, c.method, c.target, c.owner, r.input_requests, r.expires_at
		from calls c
		join rounds r on r.call_id = c.id and r.seq = c.current_seq
		join servers s on s.id = c.server_id
		join users u on u.name = $3
		where c.id = $1 and c.current_seq = $2 and c.status = 'input_required' and r.status = 'pending'
		  and r.expires_at > now() and u.email <> '' and u.email_rounds and not u.disabled
		  and ((r.asks = 'owner' and c.owner = u.name)
		       or (r.asks is null and (coalesce(c.assignee, c.owner) = u.name
		       or exists (select 1 from users p where p.name = coalesce(c.assignee, c.owner)
		                  and p.away_delegate = u.name and p.away_until > now())
		       or exists (select 1 from team_members m join teams t on t.id = m.team_id
		                  where m.user_id = u.id and 'team:' || t.name = c.assignee))))`, callID, seq, recipient)
	m, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[RoundMail])
	return m, translate(err, "round mail")
}

// SendRoundMailOnce runs send unless this mail was sent before, and
// records it as sent in the same transaction: of any number of jobs
// sending the same mail, on any instances, one sends it. Should send fail,
// nothing is recorded and a later attempt sends it.
func (s *Store) SendRoundMailOnce(ctx context.Context, a queue.MailArgs, send func() error) (sent bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `insert into round_mails (call_id, seq, recipient, kind) values ($1, $2, $3, $4)
			on conflict do nothing`, a.CallID, a.Seq, a.Recipient, a.Mail)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if err := send(); err != nil {
			return err
		}
		sent = true
		return nil
	})
	return sent, err
}

// Delivery is one webhook event and how its delivery goes.
type Delivery struct {
	ID            string     `db:"id"`
	CallID        string     `db:"call_id"`
	Type          string     `db:"type"`
	URL           string     `db:"url"`
	Signer        string     `db:"signer"`
	Body          []byte     `db:"body"`
	CreatedAt     time.Time  `db:"created_at"`
	Attempts      int        `db:"attempts"`
	LastAttemptAt *time.Time `db:"last_attempt_at"`
	LastStatus    *int       `db:"last_status"`
	LastError     *string    `db:"last_error"`
	DeliveredAt   *time.Time `db:"delivered_at"`
}

const deliveryColumns = `id, call_id::text as call_id, type, url, signer, body, created_at, attempts,
	last_attempt_at, last_status, last_error, delivered_at`

// Delivery returns one webhook event.
func (s *Store) Delivery(ctx context.Context, id string) (*Delivery, error) {
	rows, _ := s.pool.Query(ctx, `select `+deliveryColumns+` from webhook_deliveries where id = $1`, id)
	d, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Delivery])
	return d, translate(err, "delivery")
}

// Deliveries lists a call's webhook events, oldest first.
func (s *Store) Deliveries(ctx context.Context, callID string) ([]Delivery, error) {
	rows, _ := s.pool.Query(ctx, `select `+deliveryColumns+` from webhook_deliveries
		where call_id = $1 order by created_at, id`, callID)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Delivery])
}

// RecordDelivery records one attempt to post an event: the receiver's
// status (0 if it did not answer), the error, and whether it took it.
func (s *Store) RecordDelivery(ctx context.Context, id string, status int, errText string, delivered bool) error {
	_, err := s.pool.Exec(ctx, `update webhook_deliveries set attempts = attempts + 1, last_attempt_at = now(),
		last_status = nullif($2, 0), last_error = nullif($3, ''),
		delivered_at = case when $4 then coalesce(delivered_at, now()) else delivered_at end
		where id = $1`, id, status, errText, delivered)
	return err
}
