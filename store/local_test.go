package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestLocalHandOver: a local server's round names the process that asked;
// its owner is the live instance running that very process, and nobody
// once the process restarted or the instance stopped. A retry handed over
// goes to the owner's own queue and the running job completes with it;
// a retry waiting in the queue of an instance that is gone goes back to
// the default queue, while a live instance's stays.
func TestLocalHandOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := st.UpsertServer(ctx, "notes", "stdio:notes")
	if err != nil {
		t.Fatal(err)
	}
	beat := func(id string) {
		t.Helper()
		if err := st.Beat(ctx, store.Heartbeat{ID: id, Version: "test", StartedAt: time.Now(), Interval: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	runs := func(instance, process string) {
		t.Helper()
		if err := st.SetLocalProcess(ctx, store.LocalProcess{Instance: instance, Server: "notes", Running: true, Process: &process,
			Shared: true}); err != nil {
			t.Fatal(err)
		}
	}
	running := func() (string, int64) {
		t.Helper()
		call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "t"})
		if err != nil {
			t.Fatal(err)
		}
		var job int64
		if err := pool.QueryRow(ctx, `update river_job set state = 'running', attempt = 1, attempted_at = now(),
			attempted_by = array['a'] where args->>'call_id' = $1 and state = 'available' returning id`, call.ID).Scan(&job); err != nil {
			t.Fatal(err)
		}
		return call.ID, job
	}
	owner := func(callID string) string {
		t.Helper()
		o, err := st.LocalOwner(ctx, callID, 1)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	beat("a")
	beat("b")
	runs("a", "process-a")
	runs("b", "process-b")

	callID, job := running()
	if err := st.AddRound(ctx, callID, 0, store.NewRound{InputRequests: json.RawMessage(`{}`), ExpiresAt: time.Now().Add(time.Hour),
		Process: "process-a"}, store.Outcome{Job: queue.Job{ID: job, Attempt: 1}}); err != nil {
		t.Fatal(err)
	}
	if o := owner(callID); o != "a" {
		t.Errorf("owner = %q, want a, whose process asked", o)
	}
	runs("a", "process-a2")
	if o := owner(callID); o != "" {
		t.Errorf("owner after a restart = %q, want none", o)
	}
	runs("a", "process-a")
	if err := st.StopInstance(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if o := owner(callID); o != "" {
		t.Errorf("owner once a stopped = %q, want none", o)
	}

	queueOf := func(callID string) string {
		t.Helper()
		var q string
		if err := pool.QueryRow(ctx, `select queue from river_job where args->>'call_id' = $1 and state = 'available'`, callID).Scan(&q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	toA, jobA := running()
	toB, jobB := running()
	if err := st.HandOver(ctx, queue.Job{ID: jobA, Attempt: 1}, toA, 0, "a"); err != nil {
		t.Fatal(err)
	}
	if err := st.HandOver(ctx, queue.Job{ID: jobB, Attempt: 1}, toB, 0, "b"); err != nil {
		t.Fatal(err)
	}
	for _, j := range []int64{jobA, jobB} {
		var state string
		if err := pool.QueryRow(ctx, `select state::text from river_job where id = $1`, j).Scan(&state); err != nil || state != "completed" {
			t.Errorf("the job handed over is %q (%v), want completed", state, err)
		}
	}
	if q := queueOf(toB); q != queue.LocalQueue("b") {
		t.Errorf("handed to b, the retry is in queue %q", q)
	}
	if n, err := st.ReclaimLocalJobs(ctx); err != nil || n != 1 {
		t.Fatalf("reclaimed %d, %v; want the one of a, which stopped", n, err)
	}
	if q := queueOf(toA); q != "default" {
		t.Errorf("the retry handed to a, which stopped, is in queue %q, want default", q)
	}
	if q := queueOf(toB); q != queue.LocalQueue("b") {
		t.Errorf("the retry handed to b, alive, is in queue %q", q)
	}
}
