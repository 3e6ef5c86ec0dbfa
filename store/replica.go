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
// Run looks every half second at where the primary's log ends and how far
// the replica has replayed it (see look); a list reads from it only when
// it was looked at lately, lags at most maxLag behind the primary, and
// has replayed the person's last write (ReadAfter). Otherwise, and
// whenever a read from it fails, the list reads from the primary: a
// replica down or behind costs the primary some reads, never a page.
type Replica struct {
	pool    *pgxpool.Pool
	primary *pgxpool.Pool // set by New (Options.Replica)
	maxLag  time.Duration
	log     *slog.Logger
	every   time.Duration

	mu       sync.Mutex
	marks    []walMark // the primary's log ends, oldest first
	replayed LSN       // how far it had replayed at the last look
	// horizon: the replica had every commit the primary made before it.
	horizon time.Time
	seen    time.Time // when it last answered; zero: down
	down    bool      // for logging the change once
}

// walMark is where the primary's log ended, read at a time no later than
// at: every commit made before at is at or before lsn.
type walMark struct {
	at  time.Time
	lsn LSN
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

// look measures the replica's lag against the primary itself, on this
// instance's clock alone: it reads where the primary's log ends (its flush
// position, which every commit it shows is within), noting the time just
// before it asked, then how far the replica has replayed. The replica
// then has every commit made before the latest such time whose position it
// has replayed, so its lag is at most the time since. A replica that
// streams nothing (its sender stuck, its link cut, its replay paused) ages
// so, even when it has replayed all it received; a quiet primary, whose
// log does not move, leaves a replica that caught up fresh.
func (r *Replica) look(ctx context.Context) {
	lookCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	asked := time.Now()
	var end, replayed *string
	err := r.primary.QueryRow(lookCtx, `select pg_current_wal_flush_lsn()::text`).Scan(&end)
	if err != nil {
		err = fmt.Errorf("reading the primary's log position: %w", err)
	} else {
		err = r.pool.QueryRow(lookCtx, `select pg_last_wal_replay_lsn()::text`).Scan(&replayed)
	}
	if err == nil && (replayed == nil || end == nil) {
		err = errors.New("it is not a replica (pg_last_wal_replay_lsn() is null)")
	}
	var primaryLSN, lsn LSN
	if err == nil {
		if primaryLSN, err = ParseLSN(*end); err == nil {
			lsn, err = ParseLSN(*replayed)
		}
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
	r.marks = append(r.marks, walMark{at: asked, lsn: primaryLSN})
	r.horizon = r.caughtUpTo(lsn)
	r.replayed, r.seen = lsn, time.Now()
}

// caughtUpTo returns the time before which a replica that replayed up to
// lsn has every commit of the primary, and forgets the marks it no longer
// needs. Called with mu held.
func (r *Replica) caughtUpTo(lsn LSN) time.Time {
	i := -1 // the latest mark the replica has replayed
	for j, m := range r.marks {
		if m.lsn <= lsn {
			i = j
		}
	}
	if i >= 0 {
		r.marks = r.marks[i:]
		return r.marks[0].at
	}
	// Behind every mark kept: behind the oldest too. Past twice maxLag's
	// worth of marks the oldest are forgotten; the lag then still reads
	// more than maxLag.
	if keep := int(2*r.maxLag/r.every) + 4; len(r.marks) > keep {
		r.marks = r.marks[len(r.marks)-keep:]
	}
	return r.marks[0].at
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
	return !r.seen.IsZero() && time.Since(r.seen) < 4*r.every && time.Since(r.horizon) <= r.maxLag && r.replayed >= after
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
