package engine_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestEscalateThenCancelAtDeadline gives the demo server's rounds an
// escalation to team leads after an hour and cancel at their deadline, in
// two. River holds each job until its time. The engine's clock is moved
// rather than waited for: run before its time, each job waits for it; at
// the escalation time the round goes to the team, and at the deadline
// Rounds answers cancel for it and the tool finishes ("Cancelled").
func TestEscalateThenCancelAtDeadline(t *testing.T) {
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	srv := httptest.NewServer(demo.Handler(demo.Options{Secret: []byte("deadline demo")}))
	t.Cleanup(srv.Close)
	server, err := st.UpsertServer(ctx, "demo", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTeam(ctx, "leads"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetServerDeadlines(ctx, "demo", store.Deadlines{EscalateAfter: time.Hour,
		EscalateTo: "team:leads", OnExpiry: store.OnExpiryCancel}); err != nil {
		t.Fatal(err)
	}
	var now clock
	mc := mcpclient.New(mcpclient.Options{RequestTimeout: 5 * time.Second})
	eng := startEngine(t, pool, st, mc, engine.Config{RoundTTL: 2 * time.Hour, Now: now.Now,
		Capabilities: mcpclient.Capabilities{FormElicitation: true}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool,
		Target: "confirm_delete", Arguments: []byte(`{"path":"/tmp/x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	asked := waitFor(t, st, call.ID, store.CallInputRequired, 1)
	plan, err := st.RoundPlan(ctx, call.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Round(ctx, call.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if plan.EscalateAt == nil {
		t.Fatal("the round has no escalation time")
	}
	var escalateJob, deadlineJob time.Time
	if err := pool.QueryRow(ctx, `select
		(select scheduled_at from river_job where kind = 'round_escalate' and args->>'call_id' = $1),
		(select scheduled_at from river_job where kind = 'round_deadline' and args->>'call_id' = $1)`, call.ID).
		Scan(&escalateJob, &deadlineJob); err != nil {
		t.Fatal(err)
	}
	if !escalateJob.Equal(*plan.EscalateAt) || !deadlineJob.Equal(r.ExpiresAt) {
		t.Errorf("jobs scheduled at %s and %s; want the escalation time %s and the deadline %s",
			escalateJob, deadlineJob, plan.EscalateAt, r.ExpiresAt)
	}

	// early checks that a job run before its time is put off until then.
	early := func(what string, err error, until time.Time) {
		t.Helper()
		var snooze *river.JobSnoozeError
		if !errors.As(err, &snooze) {
			t.Fatalf("%s run before its time: %v; want it put off", what, err)
		}
		if left := until.Sub(now.Now()); snooze.Duration <= left || snooze.Duration > left+time.Second {
			t.Errorf("%s put off by %s; want until its time, in %s", what, snooze.Duration, left)
		}
	}
	early("the escalation", eng.RunEscalation(ctx, call.ID, 1), *plan.EscalateAt)
	now.Skip(plan.EscalateAt.Sub(now.Now()))
	if err := eng.RunEscalation(ctx, call.ID, 1); err != nil {
		t.Fatal(err)
	}
	if call, err = st.Call(ctx, call.ID); err != nil {
		t.Fatal(err)
	}
	if call.Status != store.CallInputRequired || call.Assignee == nil || *call.Assignee != "team:leads" {
		t.Fatalf("at the escalation time the round (waiting for %v) is %s, waiting for %v; want it waiting for team leads",
			deref(asked.Assignee), call.Status, deref(call.Assignee))
	}

	early("the deadline", eng.RunDeadline(ctx, call.ID, 1), r.ExpiresAt)
	now.Skip(r.ExpiresAt.Sub(now.Now()))
	if err := eng.RunDeadline(ctx, call.ID, 1); err != nil {
		t.Fatal(err)
	}
	call = waitFor(t, st, call.ID, store.CallComplete, 1)
	if !strings.Contains(string(call.Result), "Cancelled") {
		t.Fatalf("after the deadline: %s %s %v; want the tool finished with cancel", call.Status, call.Result, deref(call.Error))
	}
	if r, err = st.Round(ctx, call.ID, 1); err != nil {
		t.Fatal(err)
	}
	if r.AnsweredBy == nil || *r.AnsweredBy != store.AnsweredAtDeadline || !strings.Contains(string(r.Responses), `"cancel"`) {
		t.Errorf("round 1 answered by %v with %s; want cancel, by Rounds at the deadline", r.AnsweredBy, r.Responses)
	}
}
