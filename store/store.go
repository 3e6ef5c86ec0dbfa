// Package store is all Rounds keeps, in Postgres: servers, calls, rounds and
// drafts; people, teams, sessions and OAuth connections, secrets encrypted;
// the audit log, the instances and the numbers dashboards and /metrics read.
// A change enqueues its job (a request, mail, a webhook) in its own
// transaction, and its note (LISTEN/NOTIFY) wakes the pages and River.
package store

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
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
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Kind }

func conflict(format string, args ...any) error {
	return &Error{Kind: ErrConflict, Message: fmt.Sprintf(format, args...)}
}

func notFound(what string) error {
	return &Error{Kind: ErrNotFound, Message: what + " not found"}
}

// RequestArgs is the job that sends one MCP request: the first request of a
// call (Seq 0) or the retry carrying the answers to round Seq.
type RequestArgs struct {
	CallID string `json:"call_id"`
	Seq    int    `json:"seq"`
}

// Kind names the job for River.
func (RequestArgs) Kind() string { return "mcp_request" }

// InsertOpts lets a job orphaned by a dead instance be rescued and run again.
func (RequestArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 5} }

// Store is the Postgres store.
type Store struct {
	pool *pgxpool.Pool
	jobs *river.Client[pgx.Tx] // insert-only
	// quietJobs inserts without River's notification in the transaction,
	// for transactions announced after their commit (see announce.go).
	quietJobs *river.Client[pgx.Tx]
	announcer *announcer
	aead      cipher.AEAD // encrypts server credentials
	reach     ReachOptions
	auth      *authCache // users by token and name; nil: always read
	replica   *Replica   // the lists' replica; nil: they read the primary

	serversMu sync.Mutex
	servers   map[string]cachedServer // see ServerToCall
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
	// The insert notification that wakes the workers is limited to one per
	// FetchCooldown; keep it short so an answer's retry is picked up at once.
	jobs, err := river.NewClient(riverpgxv5.New(pool), &river.Config{FetchCooldown: time.Millisecond})
	if err != nil {
		return nil, err
	}
	quiet, err := river.NewClient(quietDriver{riverpgxv5.New(pool)}, &river.Config{})
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, jobs: jobs, quietJobs: quiet, announcer: newAnnouncer(pool)}
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

// quietDriver is River's pgx driver, saying that it cannot notify: River
// then sends no insert notification in the transaction (it would send the
// first one of each client even with the longest cooldown). The announcer
// tells of the jobs after the commit.
type quietDriver struct{ *riverpgxv5.Driver }

func (quietDriver) SupportsListenNotify() bool { return false }

// jobsFor returns the client that inserts jobs in the transaction ctx runs
// in: a quiet one when the transaction is announced after its commit.
func (s *Store) jobsFor(ctx context.Context) *river.Client[pgx.Tx] {
	if a := announcing(ctx); a != nil {
		a.jobs = true
		return s.quietJobs
	}
	return s.jobs
}

// Pool returns the pool, for health checks.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func (s *Store) enqueueTx(ctx context.Context, tx pgx.Tx, callID string, seq int) error {
	if d := directFor(ctx); d.sends(callID, seq) {
		return s.scheduleTx(ctx, tx, d, callID, seq)
	}
	_, err := s.jobsFor(ctx).InsertTx(ctx, tx, RequestArgs{CallID: callID, Seq: seq}, nil)
	return err
}

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
		case "22P02", "23514":
			return &Error{Kind: ErrInvalid, Message: what + " is not valid"}
		}
	}
	return err
}
