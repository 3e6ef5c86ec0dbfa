package store

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
)

// Postgres lets one notifying transaction commit at a time, cluster-wide:
// each holds a shared lock from just before its commit until the commit's
// flush to disk. With a notification in every answer's and every outcome's
// transaction, rounds queued behind that lock while the machine sat idle.
//
// So a round's transactions do not notify. The calls they change are
// listed by the trigger on calls (see migration 00050), their notes are
// read before the commit, and after the commit an announcer sends them,
// with the wake-up for River's workers, in one small statement for every
// transaction that committed meanwhile. That statement needs no flush: a
// notification lost to a crash costs a waiter its next look (the held
// request's periodic read, River's poll), never a change.

// announcedTx runs fn in a transaction whose changes to calls, and whose
// River jobs, are announced after it commits rather than in its commit.
func (s *Store) announcedTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	a := &announcement{}
	// One round trip begins the transaction and says so.
	opts := pgx.TxOptions{BeginQuery: `begin; set local rounds.announce = 'after'`}
	err := pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		if err := fn(context.WithValue(ctx, announcementKey{}, a), tx); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `select call_note(c) from calls c
			where c.id = any(string_to_array(trim(current_setting('rounds.changed', true)), ' ')::uuid[])`)
		var err error
		a.notes, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err == nil {
		s.announcer.add(a.notes, a.jobs)
	}
	return err
}

// announcement is what one transaction will announce after its commit.
type announcement struct {
	notes []string
	jobs  bool // River jobs were inserted
}

type announcementKey struct{}

// riverInsertPayload is River's insert notification for the queue every
// job of Rounds runs on.
var riverInsertPayload = `{"queue": "` + river.QueueDefault + `"}`

// announcing returns the announcement of the transaction ctx runs in, if
// it is announced after its commit.
func announcing(ctx context.Context) *announcement {
	a, _ := ctx.Value(announcementKey{}).(*announcement)
	return a
}

// announcer sends notifications after their transactions commit. The
// first after a quiet moment goes out at once; what arrives while it is
// sent, or within announceCooldown of it, goes out together in the next
// statement, so under load many commits share one.
type announcer struct {
	pool *pgxpool.Pool

	mu      sync.Mutex
	notes   []string
	jobs    bool
	sending bool
}

// announceCooldown is the least time between two announcements of one
// instance: a few milliseconds on a round's way, against a transaction
// for each commit.
const announceCooldown = 15 * time.Millisecond

func (a *announcer) add(notes []string, jobs bool) {
	if len(notes) == 0 && !jobs {
		return
	}
	a.mu.Lock()
	a.notes = append(a.notes, notes...)
	a.jobs = a.jobs || jobs
	start := !a.sending
	a.sending = true
	a.mu.Unlock()
	if start {
		go a.send()
	}
}

// announceSQL notifies call_changed of each note and, when jobs were
// inserted, River's workers on every instance, with the channel and
// payload River's own insert notification uses. It commits without
// waiting for a flush: nothing durable rides on it.
const announceSQL = `
	select count(*) from (
		select set_config('synchronous_commit', 'off', true)
		union all
		select pg_notify('call_changed', note)::text from unnest($1::text[]) note
		union all
		select pg_notify(current_schema() || '.river_insert', $3)::text where $2
	) sent`

func (a *announcer) send() {
	for {
		a.mu.Lock()
		notes, jobs := a.notes, a.jobs
		a.notes, a.jobs = nil, false
		if len(notes) == 0 && !jobs {
			a.sending = false
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// A statement that does not go out is dropped: its waiters learn of
		// the change at their next look.
		_, _ = a.pool.Exec(ctx, announceSQL, notes, jobs, riverInsertPayload)
		cancel()
		// What arrives in the next few milliseconds goes out together.
		time.Sleep(announceCooldown - time.Since(sent))
	}
}
