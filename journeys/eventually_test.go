package journeys

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// eventually checks cond every few tens of milliseconds until it returns
// nil, and fails the test with cond's last error after limit: how the
// journeys wait for something to happen, rather than sleep for a guessed
// while.
func eventually(t testing.TB, limit time.Duration, cond func() error) {
	t.Helper()
	if err := poll(limit, cond); err != nil {
		t.Fatalf("not within %s: %v", limit, err)
	}
}

// poll is eventually for a caller that decides what a miss means: it
// returns cond's last error after limit, or nil.
func poll(limit time.Duration, cond func() error) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		<-tick.C
	}
}

// queryRow runs one query on the test's database and scans its row.
func queryRow(t testing.TB, db, sql string, args []any, dest ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
		t.Fatal(err)
	}
}

// jobsRun waits until every River job of kind due by now (of the call,
// when callID is not empty) has run, on whichever instance: what they do
// has happened, and a test may count it, or count that nothing more came.
func jobsRun(t testing.TB, db, kind, callID string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		var left int
		queryRow(t, db, `select count(*) from river_job where kind = $1 and ($2 = '' or args->>'call_id' = $2)
			and state in ('available', 'pending', 'running', 'retryable', 'scheduled') and scheduled_at <= now()`,
			[]any{kind, callID}, &left)
		if left > 0 {
			return fmt.Errorf("%d %s jobs due are still to run", left, kind)
		}
		return nil
	})
}
