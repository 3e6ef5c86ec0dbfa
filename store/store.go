// Package store is all Rounds keeps, in Postgres: servers, calls, rounds and
// drafts; people, teams, sessions and OAuth connections, secrets encrypted;
// the audit log, the instances and the numbers dashboards and /metrics read.
// A change enqueues its job (a request, mail, a webhook) in its own
// transaction, and its note (LISTEN/NOTIFY) wakes the pages and River.
package store

import (
	"crypto/cipher"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/queue"
)

// The store's error vocabulary. Handlers map them to statuses.
var (
	ErrNotFound = errors.New("not found")
	ErrInvalid  = errors.New("invalid")
	ErrConflict = errors.New("conflict")
)

// Error carries a message a person may read, wrapping one of the sentinels.
type Error struct {
	Kind    error
	Message string
	// pastDeadline: an answer found its round pending past its deadline.
	pastDeadline bool
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Kind }

func conflict(format string, args ...any) error {
	return &Error{Kind: ErrConflict, Message: fmt.Sprintf(format, args...)}
}

func notFound(what string) error {
	return &Error{Kind: ErrNotFound, Message: what + " not found"}
}

// Store is the Postgres store.
type Store struct {
	pool      *pgxpool.Pool
	jobs      *queue.Inserter
	announcer *announcer
	aead      cipher.AEAD // encrypts server credentials
	reach     ReachOptions
	auth      *authCache // users by token and name; nil: always read
	replica   *Replica   // the lists' replica; nil: they read the primary

	serversMu sync.Mutex
	servers   map[string]cachedServer      // see ServerToCall
	policies  map[string]*approvals.Policy // by rules as stored; see ServerPolicy
}

// Options are what a Store is told at its making, all optional.
type Options struct {
	// Notifier, when set, lets the store remember who sign-ins belong to
	// until a change is heard (authcache.go), and wake this instance's own
	// waiters and workers at its commits (announce.go).
	Notifier *Notifier
	// Reach says how the store tells people about calls.
	Reach ReachOptions
	// Replica, when set, is where the lists read (see Store.read).
	Replica *Replica
}

// New returns a Store over pool.
func New(pool *pgxpool.Pool, opts ...Options) (*Store, error) {
	jobs, err := queue.NewInserter(pool)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, jobs: jobs, announcer: newAnnouncer(pool)}
	for _, o := range opts {
		if o.Notifier != nil {
			s.cacheAuth(o.Notifier)
			s.announcer.own = o.Notifier
		}
		s.reach = o.Reach
		s.replica = o.Replica
		if o.Replica != nil {
			o.Replica.primary = pool // its lag is measured against the primary
		}
	}
	return s, nil
}

// Pool returns the pool, for health checks.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// translate maps driver errors to the store's vocabulary.
func translate(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(what)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return &Error{Kind: ErrConflict, Message: what + " already exists"}
		case "23514":
			if pgErr.ConstraintName == "users_name_reserved" {
				return &Error{Kind: ErrInvalid, Message: ReservedNameMessage}
			}
			return &Error{Kind: ErrInvalid, Message: what + " is not valid"}
		case "22P02":
			return &Error{Kind: ErrInvalid, Message: what + " is not valid"}
		}
	}
	return err
}
