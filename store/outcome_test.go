package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestOutcomeCompletesItsJob checks that a request's job is marked done
// in the transaction that stores the request's outcome, on River's own
// table: the job that made the request is completed with it; a job
// rescued and running again under a later attempt is left to that
// attempt; and an outcome that is refused completes nothing.
func TestOutcomeCompletesItsJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	// running starts a call and has its first request's job taken by a
	// worker, as River's fetch does, attempts times over.
	running := func(attempts int) (string, int64) {
		t.Helper()
		call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "t"})
		if err != nil {
			t.Fatal(err)
		}
		var job int64
		err = pool.QueryRow(ctx, `update river_job set state = 'running', attempt = $2, attempted_at = now(),
			attempted_by = array['test'] where args->>'call_id' = $1 and state = 'available' returning id`,
			call.ID, attempts).Scan(&job)
		if err != nil {
			t.Fatal(err)
		}
		return call.ID, job
	}
	state := func(job int64) string {
		t.Helper()
		var s string
		var finalized bool
		if err := pool.QueryRow(ctx, `select state::text, finalized_at is not null from river_job where id = $1`, job).
			Scan(&s, &finalized); err != nil {
			t.Fatal(err)
		}
		if finalized != (s == "completed") {
			t.Fatalf("job %d is %s with finalized_at set %v", job, s, finalized)
		}
		return s
	}
	round := store.NewRound{
		InputRequests: json.RawMessage(`{"q":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}}`),
		ExpiresAt:     time.Now().Add(time.Hour),
	}

	asked, job := running(1)
	if err := st.AddRound(ctx, asked, 0, round, store.Outcome{Job: queue.Job{ID: job, Attempt: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := state(job); got != "completed" {
		t.Errorf("after its outcome (a round) was stored, the job is %s, want completed", got)
	}
	if err := st.AddRound(ctx, asked, 0, round); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second round for a request answered already: %v, want a conflict", err)
	}
	done, job := running(1)
	if err := st.CompleteCall(ctx, done, 0, json.RawMessage(`{"content":[]}`), store.Outcome{Job: queue.Job{ID: job, Attempt: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := state(job); got != "completed" {
		t.Errorf("after its outcome (the result) was stored, the job is %s, want completed", got)
	}

	rescued, job := running(2)
	if err := st.CompleteCall(ctx, rescued, 0, json.RawMessage(`{"content":[]}`), store.Outcome{Job: queue.Job{ID: job, Attempt: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := state(job); got != "running" {
		t.Errorf("an earlier attempt's outcome made the job that runs again %s, want it left running", got)
	}

	moved, job := running(1)
	err = st.CompleteCall(ctx, moved, 1, json.RawMessage(`{"content":[]}`), store.Outcome{Job: queue.Job{ID: job, Attempt: 1}})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("an outcome for a request the call is not waiting for: %v, want a conflict", err)
	}
	if got := state(job); got != "running" {
		t.Errorf("an outcome refused completed its job anyway: %s", got)
	}
}
