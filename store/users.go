package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"
)

// MinPasswordLength is the shortest password accepted.
const MinPasswordLength = 8

// User is a person who may sign in.
type User struct {
	ID           int64     `db:"id"`
	Name         string    `db:"name"`
	PasswordHash *string   `db:"password_hash"`
	IsAdmin      bool      `db:"is_admin"`
	Disabled     bool      `db:"disabled"`
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
	// TimeZone is the zone the person chose to see times in; empty for
	// their browser's.
	TimeZone string `db:"time_zone"`
}

const userColumns = `id, name, password_hash, is_admin, disabled, created_at, updated_at, time_zone`

// CreateUser adds a user with a bcrypt-hashed password. An empty password
// makes a user who can only sign in through a trusted proxy.
func (s *Store) CreateUser(ctx context.Context, name, password string, admin bool) (*User, error) {
	var hash *string
	if password != "" || admin {
		if len(password) < MinPasswordLength {
			return nil, &Error{Kind: ErrInvalid, Message: "The password must be at least 8 characters."}
		}
		h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
		if err != nil {
			return nil, &Error{Kind: ErrInvalid, Message: "The password cannot be used: " + err.Error()}
		}
		hs := string(h)
		hash = &hs
	}
	rows, _ := s.pool.Query(ctx, `insert into users (name, password_hash, is_admin) values ($1, $2, $3)
		returning `+userColumns, name, hash, admin)
	u, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[User])
	return u, translate(err, "user "+name)
}

// CreateFirstAdmin creates user name as an admin only if there are no users
// at all. It reports whether it did, so that only one instance says so.
func (s *Store) CreateFirstAdmin(ctx context.Context, name, password string) (bool, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return false, err
	}
	var created bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `lock table users in share row exclusive mode`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `insert into users (name, password_hash, is_admin)
			select $1, $2, true where not exists (select 1 from users)`, name, string(h))
		created = err == nil && tag.RowsAffected() == 1
		return err
	})
	return created, err
}

// UserByName returns a user, disabled or not.
func (s *Store) UserByName(ctx context.Context, name string) (*User, error) {
	rows, _ := s.pool.Query(ctx, `select `+userColumns+` from users where name = $1`, name)
	u, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[User])
	return u, translate(err, "user "+name)
}

// Users lists every user by name.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	rows, _ := s.pool.Query(ctx, `select `+userColumns+` from users order by name`)
	return pgx.CollectRows(rows, pgx.RowToStructByName[User])
}

// SetUserDisabled disables or enables a user.
func (s *Store) SetUserDisabled(ctx context.Context, name string, disabled bool) error {
	tag, err := s.pool.Exec(ctx, `update users set disabled = $2, updated_at = now() where name = $1`, name, disabled)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("user " + name)
	}
	return nil
}

// ErrBadCredentials is a failed sign-in; it never says which part was wrong.
var ErrBadCredentials = &Error{Kind: ErrInvalid, Message: "The name or the password is not right."}

// Authenticate checks a name and password. A disabled user, an unknown
// name and a wrong password all fail the same way, in about the same time.
func (s *Store) Authenticate(ctx context.Context, name, password string) (*User, error) {
	u, err := s.UserByName(ctx, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	hash := dummyHash()
	if err == nil && u.PasswordHash != nil {
		hash = []byte(*u.PasswordHash)
	}
	match := bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil
	if err != nil || u.PasswordHash == nil || u.Disabled || !match {
		return nil, ErrBadCredentials
	}
	return u, nil
}

// dummyHash keeps the time of a sign-in with an unknown name close to that
// of a known one.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("not a password anyone has"), bcrypt.DefaultCost)
	return h
})

// EnsureUser returns the named user, creating one without a password; for
// people signed in by a trusted proxy.
func (s *Store) EnsureUser(ctx context.Context, name string) (*User, error) {
	rows, _ := s.pool.Query(ctx, `
		with ins as (insert into users (name) values ($1) on conflict (name) do nothing returning `+userColumns+`)
		select `+userColumns+` from ins union all select `+userColumns+` from users where name = $1 limit 1`, name)
	u, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[User])
	return u, translate(err, "user "+name)
}

// RecordLoginFailure counts a failed sign-in against each key.
func (s *Store) RecordLoginFailure(ctx context.Context, keys ...string) error {
	_, err := s.pool.Exec(ctx, `insert into login_failures (key) select unnest($1::text[])`, keys)
	return err
}

// LoginFailures counts a key's failed sign-ins since.
func (s *Store) LoginFailures(ctx context.Context, key string, since time.Time) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `select count(*) from login_failures where key = $1 and at > $2`, key, since).Scan(&n)
	return n, err
}

// ClearLoginFailures forgets an account's failures after it signs in, and
// old rows of every key.
func (s *Store) ClearLoginFailures(ctx context.Context, key string, before time.Time) error {
	_, err := s.pool.Exec(ctx, `delete from login_failures where key = $1 or at < $2`, key, before)
	return err
}

// Token is an API token's record; the token itself is shown once, at creation.
type Token struct {
	ID         int64      `db:"id"`
	UserID     int64      `db:"user_id"`
	Name       string     `db:"name"`
	Prefix     string     `db:"prefix"`
	CreatedAt  time.Time  `db:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
}

const tokenColumns = `id, user_id, name, prefix, created_at, last_used_at, revoked_at`

// CreateToken makes a new API token for a user and returns it with the
// secret, which is stored only as a hash.
func (s *Store) CreateToken(ctx context.Context, userID int64, name string) (*Token, string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", err
	}
	secret := "rnd_" + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(secret))
	rows, _ := s.pool.Query(ctx, `insert into api_tokens (user_id, name, hash, prefix) values ($1, $2, $3, $4)
		returning `+tokenColumns, userID, name, sum[:], secret[:10])
	t, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Token])
	if err != nil {
		return nil, "", translate(err, "token")
	}
	return t, secret, nil
}

// Tokens lists a user's tokens, newest first.
func (s *Store) Tokens(ctx context.Context, userID int64) ([]Token, error) {
	rows, _ := s.pool.Query(ctx, `select `+tokenColumns+` from api_tokens where user_id = $1 order by id desc`, userID)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Token])
}

// RevokeToken revokes one of a user's tokens.
func (s *Store) RevokeToken(ctx context.Context, userID, tokenID int64) error {
	tag, err := s.pool.Exec(ctx, `update api_tokens set revoked_at = now()
		where id = $1 and user_id = $2 and revoked_at is null`, tokenID, userID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("token")
	}
	return nil
}

// UserByToken returns the enabled user an unrevoked token belongs to. The
// token's last use is written at most once a minute, so that API traffic
// does not cost a commit per request.
func (s *Store) UserByToken(ctx context.Context, secret string) (*User, error) {
	sum := sha256.Sum256([]byte(secret))
	var (
		tokenID int64
		stale   bool
	)
	rows, _ := s.pool.Query(ctx, `
		select t.id as token_id, (t.last_used_at is null or t.last_used_at < now() - interval '1 minute') as stale,
		       u.id, u.name, u.password_hash, u.is_admin, u.disabled, u.created_at, u.updated_at
		from api_tokens t join users u on u.id = t.user_id
		where t.hash = $1 and t.revoked_at is null and not u.disabled`, sum[:])
	u, err := pgx.CollectOneRow(rows, func(row pgx.CollectableRow) (*User, error) {
		var u User
		err := row.Scan(&tokenID, &stale, &u.ID, &u.Name, &u.PasswordHash, &u.IsAdmin, &u.Disabled, &u.CreatedAt, &u.UpdatedAt)
		return &u, err
	})
	if err != nil {
		return nil, translate(err, "token")
	}
	if stale {
		if _, err := s.pool.Exec(ctx, `update api_tokens set last_used_at = now() where id = $1`, tokenID); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// SetUserTimeZone sets the time zone a person sees times in; "" follows
// their browser.
func (s *Store) SetUserTimeZone(ctx context.Context, userID int64, zone string) error {
	tag, err := s.pool.Exec(ctx, `update users set time_zone = $2, updated_at = now() where id = $1`, userID, zone)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("user")
	}
	return nil
}
