// Package queue is River's room: the jobs Rounds runs (their kinds and
// arguments), the inserts through River's client, River's schema, and every
// statement Rounds writes itself against River's tables: the safety net of
// a request sent directly, its hand-over to River, the hand-over to another
// instance's local process, the completion with a request's outcome. The
// store runs these statements in its own transactions and batches; the
// engine's workers take the arguments. A River upgrade is read against this
// package: RiverVersion names the release it is written for.
package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// RiverVersion is the River release this package is written against: the
// version of github.com/riverqueue/river (and its driver and type modules)
// that go.mod requires. The statements below write River's tables as this
// release lays them out, and the engine's listener (engine/listener.go)
// implements an interface River marks as not yet stable. TestRiverVersion
// fails when go.mod names another release, so that an upgrade is read
// against this package before it ships.
const RiverVersion = "v0.51.2"

// Default is the queue every job runs on, but a request handed over to an
// instance's local process (LocalQueue).
const Default = river.QueueDefault

// LocalQueue is the River queue only an instance works: where a request
// that must reach its local process is handed over. ReclaimLocal names
// these queues in SQL the same way.
func LocalQueue(instance string) string {
	sum := sha256.Sum256([]byte(instance))
	return "local_" + hex.EncodeToString(sum[:])[:16]
}

// InsertChannel is the channel of River's insert notification, named
// without its schema; InsertPayload is its payload for Default, the queue
// every job inserted outside a hand-over goes on.
const (
	InsertChannel = "river_insert"
	InsertPayload = `{"queue": "` + Default + `"}`
)

// Topics are the channels River's client listens on: jobs inserted,
// leadership, and control (pauses, cancels). Named without the schema.
func Topics() []string { return []string{InsertChannel, "river_leadership", "river_control"} }

// Job is the River job a request runs as: River's own, in a worker (ID and
// Attempt), or the safety net of a request sent directly (Direct), still
// scheduled while the send runs. The zero Job is none.
type Job struct {
	ID      int64
	Attempt int
	Direct  bool
}

// Insert is a job to insert: its arguments, and when it falls due (zero:
// now).
type Insert struct {
	Args river.JobArgs
	At   time.Time
}

// Inserter inserts jobs through River's client, in the caller's
// transaction. It works no jobs: the engine's client does.
type Inserter struct {
	// loud sends River's insert notification in the transaction.
	loud *river.Client[pgx.Tx]
	// quiet sends none, for a transaction that announces its jobs after its
	// commit (store/announce.go).
	quiet *river.Client[pgx.Tx]
}

// NewInserter returns an Inserter over pool.
func NewInserter(pool *pgxpool.Pool) (*Inserter, error) {
	// The insert notification that wakes the workers is limited to one per
	// FetchCooldown; keep it short so an answer's retry is picked up at once.
	loud, err := river.NewClient(riverpgxv5.New(pool), &river.Config{FetchCooldown: time.Millisecond})
	if err != nil {
		return nil, err
	}
	quiet, err := river.NewClient(quietDriver{riverpgxv5.New(pool)}, &river.Config{})
	if err != nil {
		return nil, err
	}
	return &Inserter{loud: loud, quiet: quiet}, nil
}

// quietDriver is River's pgx driver, saying that it cannot notify: River
// then sends no insert notification in the transaction (it would send the
// first one of each client even with the longest cooldown). The store's
// announcer tells of the jobs after the commit.
type quietDriver struct{ *riverpgxv5.Driver }

func (quietDriver) SupportsListenNotify() bool { return false }

// Insert inserts jobs in tx. announced says the transaction announces its
// jobs after its commit: River then sends no notification in it.
func (in *Inserter) Insert(ctx context.Context, tx pgx.Tx, announced bool, jobs ...Insert) error {
	client := in.loud
	if announced {
		client = in.quiet
	}
	switch len(jobs) {
	case 0:
		return nil
	case 1:
		_, err := client.InsertTx(ctx, tx, jobs[0].Args, jobs[0].opts())
		return err
	}
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: j.Args, InsertOpts: j.opts()}
	}
	_, err := client.InsertManyTx(ctx, tx, params)
	return err
}

// opts are River's options for the insert: the arguments' own (their
// InsertOpts), scheduled At when set.
func (j Insert) opts() *river.InsertOpts {
	if j.At.IsZero() {
		return nil
	}
	return &river.InsertOpts{ScheduledAt: j.At}
}

// HandOver moves a request job to the queue of the instance that must run
// it, in tx: the job of round seq's retry goes there, and the running job
// completes.
func (in *Inserter) HandOver(ctx context.Context, tx pgx.Tx, running Job, callID string, seq int, instance string) error {
	if _, err := in.loud.InsertTx(ctx, tx, RequestArgs{CallID: callID, Seq: seq},
		&river.InsertOpts{Queue: LocalQueue(instance)}); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, completeJob, running.ID, running.Attempt)
	return err
}

// Migrate applies River's schema.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	return nil
}
