package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"
)

// MinPasswordLength is the shortest password accepted.
const MinPasswordLength = 8

// hashPassword checks a new password and returns its bcrypt hash.
func hashPassword(password string) (string, error) {
	if len(password) < MinPasswordLength {
		return "", &Error{Kind: ErrInvalid, Message: fmt.Sprintf("The password must be at least %d characters.", MinPasswordLength)}
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", &Error{Kind: ErrInvalid, Message: "The password cannot be used: " + err.Error()}
	}
	return string(h), nil
}

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
	// SignOnCheckDue is when the account's provider is to be asked again
	// about it (ClaimSignOnCheck); nil for an account not made by sign-on.
	// Only UserBySession and UserByToken read it.
	SignOnCheckDue *time.Time `db:"-"`
	// TokenID is the API token the user was found by (UserByToken only).
	TokenID int64 `db:"-"`
}

const userColumns = `id, name, password_hash, is_admin, disabled, created_at, updated_at, time_zone`

// CreateUser adds a user with a bcrypt-hashed password. An empty password
// makes a user who can only sign in through a trusted proxy.
func (s *Store) CreateUser(ctx context.Context, name, password string, admin bool) (*User, error) {
	var hash *string
	if password != "" || admin {
		h, err := hashPassword(password)
		if err != nil {
			return nil, err
		}
		hash = &h
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
	return created, translate(err, "user "+name)
}

// UserByName returns a user, disabled or not.
func (s *Store) UserByName(ctx context.Context, name string) (*User, error) {
	if u, ok := s.auth.name(name); ok {
		return u, nil
	}
	gen, cache := s.auth.generation()
	rows, _ := s.pool.Query(ctx, `select `+userColumns+` from users where name = $1`, name)
	u, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[User])
	if err == nil && cache {
		s.auth.putName(gen, u)
	}
	return u, translate(err, "user "+name)
}

// Users lists every user by name.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	return readRows[User](ctx, s, `select `+userColumns+` from users order by name`)
}

// SetUserDisabled disables or enables a user. Disabling ends all their
// sessions. A disable made here holds against an identity provider that
// says the person is active (see UpdateProvisionedUser) until it is
// lifted here.
func (s *Store) SetUserDisabled(ctx context.Context, name string, disabled bool) error {
	defer s.authChanged(ctx)
	if disabled {
		return s.updateUserEndingSessions(ctx, name, `update users set disabled = true, disabled_here = true, updated_at = now()
			where name = $1 returning id`, name)
	}
	return s.execOne(ctx, "user "+name, `update users set disabled = false, disabled_here = false, updated_at = now()
		where name = $1`, name)
}

// DisabledHere lists, by name, the users disabled here (on the users page
// or the command line) rather than by their identity provider.
func (s *Store) DisabledHere(ctx context.Context) (map[string]bool, error) {
	rows, _ := s.pool.Query(ctx, `select name from users where disabled and disabled_here`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, err
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

// SignInLimits are the limits on sign-in attempts within Window.
type SignInLimits struct {
	Window     time.Duration
	PerAccount int // per account, or per account and address for its usual addresses
	PerAddress int
	// KnownFor is how long an address the account signed in from stays
	// its usual address.
	KnownFor time.Duration
}

// SignInAttempt is a sign-in attempt, counted before the password is
// checked.
type SignInAttempt struct {
	// Limited is set when a limit was already reached: the attempt was not
	// counted and the password must not be checked.
	Limited    bool
	ids        []int64
	accountKey string
	address    string
}

// BeginSignIn counts one attempt to sign in as name from address, unless
// the account or the address has reached its limit. Each key is counted
// under a transaction-scoped advisory lock, so parallel attempts on any
// number of instances are counted one after another and meet the same limit
// as sequential ones. An address the account signed in from lately is
// counted per account and address: strangers who lock the account from
// elsewhere do not lock its owner out there.
func (s *Store) BeginSignIn(ctx context.Context, name, address string, l SignInLimits) (*SignInAttempt, error) {
	a := &SignInAttempt{accountKey: "user:" + strings.ToLower(name), address: address}
	addrKey := "addr:" + address
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var known bool
		if err := tx.QueryRow(ctx, `select exists (select 1 from sign_in_addresses a join users u on u.id = a.user_id
			where u.name = $1 and a.address = $2 and a.last_at > now() - make_interval(secs => $3))`,
			name, address, l.KnownFor.Seconds()).Scan(&known); err != nil {
			return err
		}
		if known {
			a.accountKey += "@" + address
		}
		keys := []string{a.accountKey, addrKey}
		limits := map[string]int{a.accountKey: l.PerAccount, addrKey: l.PerAddress}
		slices.Sort(keys) // one order everywhere, so two attempts never deadlock
		for _, key := range keys {
			if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock(hashtextextended('sign_in:' || $1, 0))`, key); err != nil {
				return err
			}
		}
		for _, key := range keys {
			var n int
			if err := tx.QueryRow(ctx, `select count(*) from login_failures where key = $1 and at > now() - make_interval(secs => $2)`,
				key, l.Window.Seconds()).Scan(&n); err != nil {
				return err
			}
			if n >= limits[key] {
				a.Limited = true
				return nil
			}
		}
		rows, _ := tx.Query(ctx, `insert into login_failures (key) select unnest($1::text[]) returning id`, keys)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		a.ids = ids
		return err
	})
	return a, err
}

// SignedIn records a successful sign-in: the attempt is taken back, the
// account's failures under the key it was counted by are forgotten, the
// address becomes one of the person's usual ones, and old attempts of every
// key are swept.
func (s *Store) SignedIn(ctx context.Context, a *SignInAttempt, userID int64, window time.Duration) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `delete from login_failures where id = any($1) or key = $2 or at < now() - make_interval(secs => $3)`,
			a.ids, a.accountKey, window.Seconds()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `insert into sign_in_addresses (user_id, address) values ($1, $2)
			on conflict (user_id, address) do update set last_at = now()`, userID, a.address)
		return err
	})
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
	defer s.authChanged(ctx)
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

// UserByToken returns the enabled user an unrevoked token belongs to;
// ErrSignOnAgain while a signed-on account's provider no longer vouches
// for it (SignOnRefused). The
// token's last use is written at most once a minute, so that API traffic
// does not cost a commit per request.
func (s *Store) UserByToken(ctx context.Context, secret string) (*User, error) {
	sum := sha256.Sum256([]byte(secret))
	if u, ok := s.auth.token(sum); ok {
		return u, nil
	}
	gen, cache := s.auth.generation()
	var (
		tokenID int64
		stale   bool
		refused bool
	)
	rows, _ := s.pool.Query(ctx, `
		select t.id as token_id, (t.last_used_at is null or t.last_used_at < now() - interval '1 minute') as stale,
		       i.refused_at is not null as refused, case when i.refused_at is null then i.check_due_at end as check_due_at,
		       u.id, u.name, u.password_hash, u.is_admin, u.disabled, u.created_at, u.updated_at, u.time_zone
		from api_tokens t join users u on u.id = t.user_id left join user_identities i on i.user_id = u.id
		where t.hash = $1 and t.revoked_at is null and not u.disabled`, sum[:])
	u, err := pgx.CollectOneRow(rows, func(row pgx.CollectableRow) (*User, error) {
		var u User
		err := row.Scan(&tokenID, &stale, &refused, &u.SignOnCheckDue,
			&u.ID, &u.Name, &u.PasswordHash, &u.IsAdmin, &u.Disabled, &u.CreatedAt, &u.UpdatedAt, &u.TimeZone)
		return &u, err
	})
	if err != nil {
		return nil, translate(err, "token")
	}
	if refused {
		return nil, ErrSignOnAgain
	}
	u.TokenID = tokenID
	if stale {
		if _, err := s.pool.Exec(ctx, `update api_tokens set last_used_at = now() where id = $1`, tokenID); err != nil {
			return nil, err
		}
	}
	if cache {
		s.auth.putToken(gen, sum, u)
	}
	return u, nil
}

// SetUserTimeZone sets the time zone a person sees times in; "" follows
// their browser. The zone is part of the user every instance remembers,
// so the page after the change, on any instance, shows it.
func (s *Store) SetUserTimeZone(ctx context.Context, userID int64, zone string) error {
	defer s.authChanged(ctx)
	tag, err := s.pool.Exec(ctx, `update users set time_zone = $2, updated_at = now() where id = $1`, userID, zone)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("user")
	}
	return nil
}
