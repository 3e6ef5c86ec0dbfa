package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Replica is a streaming replica the lists read from (DATABASE_READ_URL).
// Run looks every half second at how far it has replayed the primary's
// log and how far behind it is; a list reads from it only when it was
// looked at lately, lags at most maxLag, and has replayed the person's
// last write (ReadAfter). Otherwise, and whenever a read from it fails,
// the list reads from the primary: a replica down or behind costs the
// primary some reads, never a page.
type Replica struct {
	pool   *pgxpool.Pool
	maxLag time.Duration
	log    *slog.Logger
	every  time.Duration

	mu       sync.Mutex
	replayed LSN // how far it had replayed at the last look
	lag      time.Duration
	seen     time.Time // when it last answered; zero: down
	down     bool      // for logging the change once
}

// NewReplica returns a Replica over pool; Run starts looking at it.
func NewReplica(pool *pgxpool.Pool, maxLag time.Duration, log *slog.Logger) *Replica {
	return &Replica{pool: pool, maxLag: maxLag, log: log, every: 500 * time.Millisecond}
}

// LSN is a position in Postgres's write-ahead log.
type LSN uint64

// ParseLSN reads an LSN as Postgres prints it: 16/B374D848.
func ParseLSN(s string) (LSN, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("LSN %q: want X/Y", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("LSN %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("LSN %q: %w", s, err)
	}
	return LSN(h<<32 | l), nil
}

func (l LSN) String() string { return fmt.Sprintf("%X/%X", uint64(l)>>32, uint64(l)&0xFFFFFFFF) }

// replicaState is what one look at the replica finds. The lag is nought
// when it streams from the primary and has replayed all it received;
// otherwise it is the age of the last transaction it replayed, which
// overstates a lag after a quiet spell: the lists then read the primary
// for a moment, never stale rows. A replica cut off from its primary
// (no WAL receiver, or one not streaming) ages so until READ_MAX_LAG.
// Without pg_read_all_stats the receiver's status reads as null: its
// presence is taken for streaming.
const replicaState = `select pg_last_wal_replay_lsn()::text,
	case when pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
	      and exists (select from pg_stat_wal_receiver where coalesce(status, 'streaming') = 'streaming') then 0
	else coalesce(extract(epoch from now() - pg_last_xact_replay_timestamp()), 1e9) end::float8`

// Run looks at the replica until ctx ends.
func (r *Replica) Run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		r.look(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Replica) look(ctx context.Context) {
	lookCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var replayed *string
	var lag float64
	err := r.pool.QueryRow(lookCtx, replicaState).Scan(&replayed, &lag)
	if err == nil && replayed == nil {
		err = errors.New("it is not a replica (pg_last_wal_replay_lsn() is null)")
	}
	var lsn LSN
	if err == nil {
		lsn, err = ParseLSN(*replayed)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.failed(err)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		r.log.Info("read replica answers again; lists read from it")
		r.down = false
	}
	r.replayed, r.lag, r.seen = lsn, time.Duration(lag*float64(time.Second)), time.Now()
}

// failed marks the replica down until its next successful look.
func (r *Replica) failed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = time.Time{}
	if !r.down {
		r.log.Warn("read replica unusable; lists read from the primary", "err", err)
		r.down = true
	}
}

// usable reports whether a read that must see after may go to the replica.
func (r *Replica) usable(after LSN) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.seen.IsZero() && time.Since(r.seen) < 4*r.every && r.lag <= r.maxLag && r.replayed >= after
}

type readAfterKey struct{}

// ReadAfter returns ctx saying that reads in it must see what was written
// up to lsn: the person's last write. Lists read the replica only once it
// has replayed that far.
func ReadAfter(ctx context.Context, lsn LSN) context.Context {
	if lsn == 0 {
		return ctx
	}
	return context.WithValue(ctx, readAfterKey{}, lsn)
}

func readAfter(ctx context.Context) LSN {
	lsn, _ := ctx.Value(readAfterKey{}).(LSN)
	return lsn
}

// HasReplica reports whether lists may read from a replica, so that the
// positions of writes are worth keeping.
func (s *Store) HasReplica() bool { return s.replica != nil }

// WriteLSN is where the primary's log ends now: every write committed
// before the call is at or before it.
func (s *Store) WriteLSN(ctx context.Context) (LSN, error) {
	var v string
	if err := s.pool.QueryRow(ctx, `select pg_current_wal_insert_lsn()::text`).Scan(&v); err != nil {
		return 0, err
	}
	return ParseLSN(v)
}

// reader is what a list needs of a connection.
type reader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// read runs fn, which only reads, on the replica when it may (see
// Replica), and on the primary otherwise or when the replica's read
// fails. fn may run twice, so it keeps nothing from a failed run.
func (s *Store) read(ctx context.Context, fn func(q reader) error) error {
	if r := s.replica; r != nil && r.usable(readAfter(ctx)) {
		err := fn(r.pool)
		if err == nil || ctx.Err() != nil || errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var serr *Error
		if errors.As(err, &serr) {
			return err
		}
		r.failed(err)
	}
	return fn(s.pool)
}

// readRows reads the rows of a list into Ts by column name, as read does.
func readRows[T any](ctx context.Context, s *Store, sql string, args ...any) ([]T, error) {
	var out []T
	err := s.read(ctx, func(q reader) error {
		rows, _ := q.Query(ctx, sql, args...)
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowToStructByName[T])
		return err
	})
	return out, err
}
