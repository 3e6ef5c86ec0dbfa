package store

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/queue"
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

// txn is a transaction of the store's: pgx's, and, when it is announced
// after its commit (announcedTx), what it will announce. Its helpers that
// change calls or insert jobs take it, so they know how to tell of them.
type txn struct {
	pgx.Tx
	// announced: the transaction's changes to calls, and its River jobs,
	// are announced after its commit, not in it. A transaction that is
	// not leaves River's insert notification in its commit.
	announced bool
	notes     []callNote
	read      bool // the notes were read with the transaction's last change
	jobs      bool // River jobs were inserted
	// direct: the request it enqueued is sent by this instance at once
	// (see Direct); its job is scheduled, so River's workers are not told.
	direct bool
}

// announcedTx runs fn in a transaction whose changes to calls, and whose
// River jobs, are announced after it commits rather than in its commit.
// The notes of the calls it changed are read last, before the commit,
// unless fn read them with its last change (queueNotes).
func (s *Store) announcedTx(ctx context.Context, fn func(tx *txn) error) error {
	var t *txn
	// One round trip begins the transaction and says so.
	opts := pgx.TxOptions{BeginQuery: `begin; set local rounds.announce = 'after'`}
	err := pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		t = &txn{Tx: tx, announced: true}
		if err := fn(t); err != nil {
			return err
		}
		if t.read {
			return nil
		}
		rows, _ := tx.Query(ctx, changedNotes)
		return t.collect(rows)
	})
	if err == nil {
		s.announcer.add(t.notes, t.jobs, t.direct)
	}
	return err
}

// inTx runs fn in a transaction that is not announced after its commit:
// River's insert notification, if any, goes out in it.
func (s *Store) inTx(ctx context.Context, fn func(tx *txn) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(&txn{Tx: tx}) })
}

// changedNotes reads the notes of the calls the transaction changed, as
// the trigger on calls listed them (a function: see migration 00066).
const changedNotes = `select id, working, note from changed_call_notes()`

// queueNotes reads the notes of the calls tx changed at the end of b,
// sparing the transaction a round trip before its commit. Only the batch
// with the transaction's last change to a call or a round may queue it: a
// later change would go unannounced.
func queueNotes(tx *txn, b *pgx.Batch) {
	if !tx.announced {
		return
	}
	tx.read = true
	b.Queue(changedNotes).Query(tx.collect)
}

func (tx *txn) collect(rows pgx.Rows) error {
	var err error
	tx.notes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (callNote, error) {
		var n callNote
		err := row.Scan(&n.id, &n.working, &n.text)
		return n, err
	})
	return err
}

// callNote is a call's note (see call_note in the migrations), as a
// transaction that changed the call read it before its commit.
type callNote struct {
	id string
	// working: the call waits for its request to be sent, or for the
	// server's reply to it.
	working bool
	text    string
}

// enqueueJobs inserts jobs in tx through River's client, which tells
// River's workers in the commit, or, in a transaction announced after its
// commit, leaves that to the announcement.
func (s *Store) enqueueJobs(ctx context.Context, tx *txn, jobs ...queue.Insert) error {
	if tx.announced && len(jobs) > 0 {
		tx.jobs = true
	}
	return s.jobs.Insert(ctx, tx.Tx, tx.announced, jobs...)
}

// announcer sends notifications after their transactions commit. The
// first after a quiet moment goes out at once; what arrives while it is
// sent, or within announceCooldown of it, goes out together in the next
// statement, so under load many commits share one. Of a call's notes only
// the latest waiting to go out is sent.
type announcer struct {
	pool *pgxpool.Pool
	// own, when set, hears this instance's commits at once (see Options.Notifier).
	own *Notifier

	mu sync.Mutex
	// notes are the latest notes to send, by call.
	notes map[string]string
	// held are notes of calls that went to this instance's own workers,
	// kept back for a while in case the reply's note replaces them (see
	// holdWorking). Once due, they go out with the rest.
	held    map[string]heldNote
	jobs    bool
	sending bool
	// wake cuts short the sender's wait for a held note when something
	// else is to be sent.
	wake chan struct{}
}

func newAnnouncer(pool *pgxpool.Pool) *announcer {
	return &announcer{pool: pool, notes: map[string]string{}, held: map[string]heldNote{}, wake: make(chan struct{}, 1)}
}

type heldNote struct {
	text string
	due  time.Time
}

// announceCooldown is the least time between two announcements of one
// instance. Each costs a transaction, and one more for every listening
// instance, which Postgres wakes to read it. A round through one instance
// crosses no announcement (the instance hears its own commits, and sends
// its requests itself: see Direct), so the wait is only another
// instance's, which hears of a change at most this much later; under load
// many commits share one announcement.
const announceCooldown = 100 * time.Millisecond

// holdWorking is how long the note of a call sent on to this instance's
// own workers waits before it is announced. Each announcement costs a
// transaction, and one more for every listening instance, which Postgres
// wakes to read it. The server's reply usually comes within that time; its
// note then replaces the one held, and a round's way through one instance
// is announced once instead of twice. This instance's own waiters heard
// the held note at once (Options.Notifier); others learn that the call is being
// sent on this much later, and of the reply no later.
const holdWorking = 100 * time.Millisecond

func (a *announcer) add(notes []callNote, jobs, direct bool) {
	if len(notes) == 0 && !jobs {
		return
	}
	// Working notes are held when this instance runs the jobs itself, or
	// sends the request directly.
	hold := direct && a.own != nil
	if a.own != nil && a.own.hearOwn(notes, jobs) {
		jobs, hold = false, true // this instance's workers fetch it; see Options.Notifier
	}
	a.mu.Lock()
	now := time.Now()
	for _, n := range notes {
		if hold && n.working {
			delete(a.notes, n.id)
			a.held[n.id] = heldNote{text: n.text, due: now.Add(holdWorking)}
			continue
		}
		delete(a.held, n.id)
		a.notes[n.id] = n.text
	}
	a.jobs = a.jobs || jobs
	start := !a.sending && (len(a.notes) > 0 || a.jobs || len(a.held) > 0)
	a.sending = a.sending || start
	a.mu.Unlock()
	if start {
		go a.send()
		return
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// next takes what is due to be sent. With nothing due it returns how long
// until a held note is, or stops the sender when nothing is held.
func (a *announcer) next(now time.Time) (notes []string, jobs bool, wait time.Duration, stop bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var soonest time.Time
	for id, h := range a.held {
		if !h.due.After(now) {
			a.notes[id] = h.text
			delete(a.held, id)
		} else if soonest.IsZero() || h.due.Before(soonest) {
			soonest = h.due
		}
	}
	if len(a.notes) == 0 && !a.jobs {
		if soonest.IsZero() {
			a.sending = false
			return nil, false, 0, true
		}
		return nil, false, soonest.Sub(now), false
	}
	for id, text := range a.notes {
		notes = append(notes, text)
		delete(a.notes, id)
	}
	jobs, a.jobs = a.jobs, false
	return notes, jobs, 0, false
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
		select pg_notify(current_schema() || '.` + queue.InsertChannel + `', $3)::text where $2
	) sent`

func (a *announcer) send() {
	for {
		notes, jobs, wait, stop := a.next(time.Now())
		if stop {
			return
		}
		if wait > 0 {
			// Only held notes: wait until the first is due, or until
			// something else is added.
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-a.wake:
				t.Stop()
			}
			continue
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// A statement that does not go out is dropped: its waiters learn of
		// the change at their next look.
		_, _ = a.pool.Exec(ctx, announceSQL, notes, jobs, queue.InsertPayload)
		cancel()
		// What arrives in the next few milliseconds goes out together.
		time.Sleep(announceCooldown - time.Since(sent))
	}
}
