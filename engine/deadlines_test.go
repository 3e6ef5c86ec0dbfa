package engine_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestEscalateThenCancelAtDeadline gives the demo server's rounds an
// escalation to team leads after half a second and cancel at their
// deadline (6 s). A round nobody answers goes to the team first, then
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
	if err := st.SetServerDeadlines(ctx, "demo", store.Deadlines{EscalateAfter: 500 * time.Millisecond,
		EscalateTo: "team:leads", OnExpiry: store.OnExpiryCancel}); err != nil {
		t.Fatal(err)
	}
	mc := mcpclient.New(mcpclient.Options{RequestTimeout: 5 * time.Second})
	startEngine(t, pool, st, mc, engine.Config{RoundTTL: 6 * time.Second, Capabilities: mcpclient.Capabilities{FormElicitation: true}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool,
		Target: "confirm_delete", Arguments: []byte(`{"path":"/tmp/x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var escalatedBeforeDeadline bool
	eventually(t, 30*time.Second, func() error {
		if call, err = st.Call(ctx, call.ID); err != nil {
			t.Fatal(err)
		}
		if call.Status == store.CallInputRequired && call.Assignee != nil && *call.Assignee == "team:leads" {
			escalatedBeforeDeadline = true
		}
		if !call.Finished() {
			return fmt.Errorf("the call is still %s", call.Status)
		}
		return nil
	})
	if !escalatedBeforeDeadline {
		t.Error("the round never waited for team leads before its deadline")
	}
	if call.Status != store.CallComplete || !strings.Contains(string(call.Result), "Cancelled") {
		t.Fatalf("after the deadline: %s %s %v; want the tool finished with cancel", call.Status, call.Result, deref(call.Error))
	}
	r, err := st.Round(ctx, call.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.AnsweredBy == nil || *r.AnsweredBy != store.AnsweredAtDeadline || !strings.Contains(string(r.Responses), `"cancel"`) {
		t.Errorf("round 1 answered by %v with %s; want cancel, by Rounds at the deadline", r.AnsweredBy, r.Responses)
	}
}
