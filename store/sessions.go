package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Session is one sign-in of a person, on one device.
type Session struct {
	ID         int64     `db:"id"`
	UserAgent  string    `db:"user_agent"`
	Address    string    `db:"address"`
	CreatedAt  time.Time `db:"created_at"`
	LastSeenAt time.Time `db:"last_seen_at"`
	ExpiresAt  time.Time `db:"expires_at"`
}

// CreateSession starts a session for a user and returns the secret for its
// cookie, which is stored only as a hash. The user's expired sessions are
// swept on the way.
func (s *Store) CreateSession(ctx context.Context, userID int64, userAgent, address string, ttl time.Duration) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	secret := base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(secret))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `delete from sessions where user_id = $1 and expires_at < now()`, userID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `insert into sessions (user_id, secret_hash, user_agent, address, expires_at)
			values ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
			userID, sum[:], clean(userAgent, 512), clean(address, 64), ttl.Seconds())
		return err
	})
	return secret, err
}

// UserBySession returns the enabled user a live session belongs to, with
// the session's id: the one lookup a signed-in request costs, remembered
// for a while (see authCache). The session's last use is written at most
// once a minute.
func (s *Store) UserBySession(ctx context.Context, secret string) (*User, int64, error) {
	sum := sha256.Sum256([]byte(secret))
	if u, id, ok := s.auth.session(sum); ok {
		return u, id, nil
	}
	gen, cache := s.auth.generation()
	var (
		sessionID int64
		stale     bool
		expires   time.Time
	)
	rows, _ := s.pool.Query(ctx, `
		select s.id as session_id, s.last_seen_at < now() - interval '1 minute' as stale, s.expires_at,
		       case when i.refused_at is null then i.check_due_at end as check_due_at,
		       u.id, u.name, u.password_hash, u.is_admin, u.disabled, u.created_at, u.updated_at, u.time_zone
		from sessions s join users u on u.id = s.user_id left join user_identities i on i.user_id = u.id
		where s.secret_hash = $1 and s.expires_at > now() and not u.disabled`, sum[:])
	u, err := pgx.CollectOneRow(rows, func(row pgx.CollectableRow) (*User, error) {
		var u User
		err := row.Scan(&sessionID, &stale, &expires, &u.SignOnCheckDue,
			&u.ID, &u.Name, &u.PasswordHash, &u.IsAdmin, &u.Disabled, &u.CreatedAt, &u.UpdatedAt, &u.TimeZone)
		return &u, err
	})
	if err != nil {
		return nil, 0, translate(err, "session")
	}
	if stale {
		if _, err := s.pool.Exec(ctx, `update sessions set last_seen_at = now() where id = $1`, sessionID); err != nil {
			return nil, 0, err
		}
	}
	if cache {
		s.auth.putSession(gen, sum, u, sessionID, expires)
	}
	return u, sessionID, nil
}

// Sessions lists a user's live sessions, most recently used first.
func (s *Store) Sessions(ctx context.Context, userID int64) ([]Session, error) {
	rows, _ := s.pool.Query(ctx, `select id, user_agent, address, created_at, last_seen_at, expires_at
		from sessions where user_id = $1 and expires_at > now() order by last_seen_at desc, id desc`, userID)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Session])
}

// EndSession ends the session a cookie's secret belongs to.
func (s *Store) EndSession(ctx context.Context, secret string) error {
	defer s.authChanged(ctx)
	sum := sha256.Sum256([]byte(secret))
	_, err := s.pool.Exec(ctx, `delete from sessions where secret_hash = $1`, sum[:])
	return err
}

// EndUserSession ends one of a user's sessions.
func (s *Store) EndUserSession(ctx context.Context, userID, sessionID int64) error {
	defer s.authChanged(ctx)
	return s.execOne(ctx, "session", `delete from sessions where id = $1 and user_id = $2`, sessionID, userID)
}

// EndUserSessions ends every session of a user, and says how many there were.
func (s *Store) EndUserSessions(ctx context.Context, userID int64) (int64, error) {
	defer s.authChanged(ctx)
	tag, err := s.pool.Exec(ctx, `delete from sessions where user_id = $1`, userID)
	return tag.RowsAffected(), err
}

// clean makes what a client sent storable text of at most max bytes:
// valid UTF-8 without NUL.
func clean(s string, max int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	for len(s) > max {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
