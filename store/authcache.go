package store

import (
	"sync"
	"time"
)

// authCacheTTL bounds how long a user found by token or name is reused
// without asking Postgres. Changes to users and tokens are announced to
// every instance (auth_changed), which forgets everything at once; the
// bound covers the rest. It is below a minute, so a token's last use is
// still written about once a minute.
const authCacheTTL = 30 * time.Second

// authCache remembers who an API token or a session's name belongs to, so
// a request costs no read to find its user. It is used only while change
// notifications flow.
type authCache struct {
	live func() bool

	mu     sync.Mutex
	gen    uint64 // bumped by every forget, so a read begun before is not kept
	tokens map[[32]byte]authEntry
	names  map[string]authEntry
}

type authEntry struct {
	user User
	at   time.Time
}

// CacheAuth lets the store remember users found by token or name, for as
// long as n says users and tokens did not change.
func (s *Store) CacheAuth(n *Notifier) {
	c := &authCache{live: n.Listening, tokens: map[[32]byte]authEntry{}, names: map[string]authEntry{}}
	n.OnAuthChanged(c.forget)
	s.auth = c
}

// forgetAuth drops what the cache remembers, after a change made here.
func (s *Store) forgetAuth() {
	if s.auth != nil {
		s.auth.forget()
	}
}

func (c *authCache) forget() {
	c.mu.Lock()
	c.gen++
	clear(c.tokens)
	clear(c.names)
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
