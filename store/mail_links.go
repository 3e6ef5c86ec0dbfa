package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// MailLink is one mail's links that decide from the mail (see package
// maillink): what they decide, for whom, and whether they were used.
type MailLink struct {
	Kind      string     `db:"kind"`
	CallID    string     `db:"call_id"`
	Seq       int        `db:"seq"`
	Person    string     `db:"person"`
	CreatedAt time.Time  `db:"created_at"`
	UsedAt    *time.Time `db:"used_at"`
}

// NewMailLink is a mail's links to store before the mail is sent: the
// hash of their nonce, and what they decide.
type NewMailLink struct {
	Hash   []byte
	Kind   string
	Person string
}

// MailLinkUsedMessage is said of a link whose mail's links were used.
const MailLinkUsedMessage = "This link was used already: a mail's links decide once."

// MailLink returns the links of the mail whose nonce hashes to hash.
func (s *Store) MailLink(ctx context.Context, hash []byte) (*MailLink, error) {
	rows, _ := s.pool.Query(ctx, `select kind, call_id::text as call_id, seq, person, created_at, used_at
		from mail_links where hash = $1`, hash)
	l, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[MailLink])
	return l, translate(err, "link")
}

// AddMailLink stores the links of a mail about round seq of the call (an
// approval's: ApprovalSeq), committed before the mail is sent, so that
// they are known by the time anyone follows them. A mail that is then not
// sent (another job sent it first) leaves a row whose nonce nobody has;
// it goes with the call.
func (s *Store) AddMailLink(ctx context.Context, callID string, seq int, l NewMailLink) error {
	_, err := s.pool.Exec(ctx, `insert into mail_links (hash, kind, call_id, seq, person) values ($1, $2, $3, $4, $5)`,
		l.Hash, l.Kind, callID, seq, l.Person)
	return err
}

// useMailLinkTx marks a mail's links used, in the transaction that stores
// what they decide: of any number of posts, one gets here first and the
// others roll back with MailLinkUsedMessage.
func useMailLinkTx(ctx context.Context, tx pgx.Tx, hash []byte) error {
	tag, err := tx.Exec(ctx, `update mail_links set used_at = now() where hash = $1 and used_at is null`, hash)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return conflict("%s", MailLinkUsedMessage)
	}
	return nil
}
