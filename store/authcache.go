package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// authCacheTTL bounds how long a user found by session, token or name is
// reused without asking Postgres. Changes to users, sessions and tokens
// are announced to every instance (auth_changed), which forgets
// everything at once; the bound covers the rest. It is below a minute, so
// a session's or a token's last use is still written about once a minute.
const authCacheTTL = 30 * time.Second

// authCache remembers who an API token, a session or a name belongs to,
// so a request costs no read to find its user. It is used only while
// change notifications flow.
//
// A change that ends a sign-in (a session ended, a password set, a user
// disabled, a token revoked) is numbered and announced (migration 00052).
// Every instance forgets what it remembered and records the number it
// heard; the request that made the change waits until every live instance
// has (awaitAuthHeard), so a copied cookie or token is refused on every
// instance once the page that ended it has answered. A change to what is
// remembered of a user (its admin rights, its time zone) does the same,
// so the next page, on any instance, shows it.
type authCache struct {
	live func() bool
	log  *slog.Logger

	mu       sync.Mutex
	gen      uint64 // bumped by every forget, so a read begun before is not kept
	tokens   map[[32]byte]authEntry
	names    map[string]authEntry
	sessions map[[32]byte]sessionEntry
}

type authEntry struct {
	user User
	at   time.Time
}

type sessionEntry struct {
	authEntry
	id      int64
	expires time.Time
}

// cacheAuth lets the store remember users found by session, token or
// name, for as long as n says sign-ins did not change.
func (s *Store) cacheAuth(n *Notifier) {
	c := &authCache{live: n.Listening, log: n.log, tokens: map[[32]byte]authEntry{}, names: map[string]authEntry{},
		sessions: map[[32]byte]sessionEntry{}}
	n.OnAuthChanged(c.forget)
	s.auth = c
}

// forgetAuth drops what the cache remembers, after a change made here.
func (s *Store) forgetAuth() {
	if s.auth != nil {
		s.auth.forget()
	}
}

// authChanged follows a change that may end sign-ins: this instance
// forgets at once, and the change is not done until every live instance
// has heard of it (see authCache).
func (s *Store) authChanged(ctx context.Context) {
	s.forgetAuth()
	if err := s.awaitAuthHeard(ctx); err != nil {
		s.auth.log.WarnContext(ctx, "waiting for every instance to hear of a sign-in change", "err", err)
	}
}

// authHeardWait bounds the wait for other instances to hear of a change;
// one that has not heard by then is not answering (it misses its
// heartbeats soon after).
const authHeardWait = 3 * time.Second

// awaitAuthHeard waits until every live instance has heard every change
// to sign-ins committed so far.
func (s *Store) awaitAuthHeard(ctx context.Context) error {
	if s.auth == nil {
		return nil // no instance remembers (every one is set up alike)
	}
	var last int64
	if err := s.pool.QueryRow(ctx, authChangesSQL).Scan(&last); err != nil {
		return err
	}
	deadline := time.Now().Add(authHeardWait)
	for {
		rows, _ := s.pool.Query(ctx, `select id from instances
			where stopped_at is null and last_seen_at > now() - 3 * interval_ms * interval '1 millisecond'
			  and auth_heard < $1`, last)
		behind, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(behind) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("instances %v have not heard of change %d after %s", behind, last, authHeardWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// authChangesSQL reads the number of the last change to sign-ins.
const authChangesSQL = `select case when is_called then last_value else 0 end from auth_changes`

// AuthHeard records that an instance has heard every change to sign-ins
// up to n.
func (s *Store) AuthHeard(ctx context.Context, instance string, n int64) error {
	_, err := s.pool.Exec(ctx, `update instances set auth_heard = greatest(auth_heard, $2) where id = $1`, instance, n)
	return err
}

func (c *authCache) forget() {
	c.mu.Lock()
	c.gen++
	clear(c.tokens)
	clear(c.names)
	clear(c.sessions)
	c.mu.Unlock()
}

// generation returns the generation to pass to put, and whether the cache
// may be used now.
func (c *authCache) generation() (uint64, bool) {
	if c == nil || !c.live() {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, true
}

func (c *authCache) token(sum [32]byte) (*User, bool) {
	if c == nil || !c.live() {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.tokens[sum]
	if !ok || time.Since(e.at) > authCacheTTL {
		return nil, false
	}
	u := e.user
	return &u, true
}

func (c *authCache) name(name string) (*User, bool) {
	if c == nil || !c.live() {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.names[name]
	if !ok || time.Since(e.at) > authCacheTTL {
		return nil, false
	}
	u := e.user
	return &u, true
}

func (c *authCache) session(sum [32]byte) (*User, int64, bool) {
	if c == nil || !c.live() {
		return nil, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.sessions[sum]
	if !ok || time.Since(e.at) > authCacheTTL || !time.Now().Before(e.expires) {
		return nil, 0, false
	}
	u := e.user
	return &u, e.id, true
}

// checkDue sets when a user's next check at their provider is due in
// every entry of theirs, so that a check taken on, here or elsewhere, is
// not asked for again by each request until the entries expire.
func (c *authCache) checkDue(userID int64, due time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.sessions {
		if e.user.ID == userID {
			e.user.SignOnCheckDue = &due
			c.sessions[k] = e
		}
	}
	for k, e := range c.tokens {
		if e.user.ID == userID {
			e.user.SignOnCheckDue = &due
			c.tokens[k] = e
		}
	}
}

func (c *authCache) putSession(gen uint64, sum [32]byte, u *User, id int64, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen && len(c.sessions) < 10_000 {
		c.sessions[sum] = sessionEntry{authEntry: authEntry{user: *u, at: time.Now()}, id: id, expires: expires}
	}
}

func (c *authCache) putToken(gen uint64, sum [32]byte, u *User) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen && len(c.tokens) < 10_000 {
		c.tokens[sum] = authEntry{user: *u, at: time.Now()}
	}
}

func (c *authCache) putName(gen uint64, u *User) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen && len(c.names) < 10_000 {
		c.names[u.Name] = authEntry{user: *u, at: time.Now()}
	}
}
