package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// ProvisionToken is a provisioning (SCIM) token's record; the token itself
// is shown once, when it is made.
type ProvisionToken struct {
	ID         int64      `db:"id"`
	Name       string     `db:"name"`
	CreatedAt  time.Time  `db:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
}

const provisionTokenColumns = `id, name, created_at, last_used_at, revoked_at`

// checkTokenName refuses a token name the audit log and the command line
// could not show as one word.
func checkTokenName(name string) error {
	ok := name != "" && utf8.RuneCountInString(name) <= 64 && strings.TrimSpace(name) == name &&
		!strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) })
	if !ok {
		return &Error{Kind: ErrInvalid, Message: "A token's name is 1 to 64 characters, without spaces."}
	}
	return nil
}

// CreateProvisionToken makes a bearer token an identity provider uses to
// provision people and groups (SCIM), and returns it; it is stored only as
// a hash. Names are unique, revoked tokens' included, so the audit log's
// name for a token names one.
func (s *Store) CreateProvisionToken(ctx context.Context, name string) (string, error) {
	if err := checkTokenName(name); err != nil {
		return "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	secret := "scim_" + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(secret))
	tag, err := s.pool.Exec(ctx, `insert into scim_tokens (name, hash) values ($1, $2) on conflict (name) do nothing`, name, sum[:])
	if err != nil {
		return "", err
	}
	if tag.RowsAffected() == 0 {
		return "", conflict("A provisioning token named %s exists already (see web scim token list); choose another name.", quote(name))
	}
	return secret, nil
}

// ProvisionTokenBySecret returns the unrevoked provisioning token secret
// is, or ErrNotFound. It is read from Postgres on every request, never
// remembered, so a revocation holds on every instance at once. Its last
// use is written at most once a minute.
func (s *Store) ProvisionTokenBySecret(ctx context.Context, secret string) (*ProvisionToken, error) {
	sum := sha256.Sum256([]byte(secret))
	var stale bool
	var t ProvisionToken
	err := s.pool.QueryRow(ctx, `select id, name, created_at, last_used_at, revoked_at,
			(last_used_at is null or last_used_at < now() - interval '1 minute') as stale
		from scim_tokens where hash = $1 and revoked_at is null`, sum[:]).
		Scan(&t.ID, &t.Name, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt, &stale)
	if err != nil {
		return nil, translate(err, "provisioning token")
	}
	if stale {
		if _, err := s.pool.Exec(ctx, `update scim_tokens set last_used_at = now() where id = $1`, t.ID); err != nil {
			return nil, err
		}
	}
	return &t, nil
}

// ProvisionTokens lists every provisioning token, revoked ones too, oldest
// first.
func (s *Store) ProvisionTokens(ctx context.Context) ([]ProvisionToken, error) {
	rows, _ := s.pool.Query(ctx, `select `+provisionTokenColumns+` from scim_tokens order by id`)
	return pgx.CollectRows(rows, pgx.RowToStructByName[ProvisionToken])
}

// RevokeProvisionToken revokes the unrevoked provisioning token named
// name and writes e (its actor, instance and address) to the audit log
// in the same transaction. The next request with it, on any instance,
// gets 401: tokens are not remembered (see ProvisionTokenBySecret).
func (s *Store) RevokeProvisionToken(ctx context.Context, name string, e AuditEntry) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `update scim_tokens set revoked_at = now() where name = $1 and revoked_at is null`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return &Error{Kind: ErrNotFound, Message: "There is no unrevoked provisioning token named " + quote(name) + " (see web scim token list)."}
		}
		e.Action, e.Target = "scim.token_revoked", name
		return auditTx(ctx, tx, e)
	})
}
