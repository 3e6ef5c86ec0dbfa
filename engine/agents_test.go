package engine_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestAgentRoundAsks: a round the demo server asks in a call an agent
// started is stored as asking the agent when the agent declared forms, and
// then has no escalation; an agent that declared nothing leaves the round
// to its owner, escalated as any other.
func TestAgentRoundAsks(t *testing.T) {
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	srv := httptest.NewServer(demo.Handler(demo.Options{Secret: []byte("agent demo")}))
	t.Cleanup(srv.Close)
	server, err := st.UpsertServer(ctx, "demo", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTeam(ctx, "leads"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetServerDeadlines(ctx, "demo", store.Deadlines{EscalateAfter: time.Hour,
		EscalateTo: "team:leads", OnExpiry: store.OnExpiryExpire}); err != nil {
		t.Fatal(err)
	}
	mc := mcpclient.New(mcpclient.Options{RequestTimeout: 5 * time.Second})
	startEngine(t, pool, st, mc, engine.Config{RoundTTL: 2 * time.Hour,
		Capabilities: mcpclient.Capabilities{FormElicitation: true}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, c := range []struct {
		can      store.AgentCan
		asks     string
		escalate bool
	}{
		{store.AgentCan{Form: true}, store.AsksAgent, false},
		{store.AgentCan{}, "", true},
	} {
		call, err := st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool,
			Target: "confirm_delete", Arguments: []byte(`{"path":"/tmp/x"}`),
			Agent: &store.Agent{Name: "claude-code", Protocol: "2026-07-28", Can: c.can}})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, st, call.ID, store.CallInputRequired, 1)
		r, err := st.Round(ctx, call.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := deref(r.Asks); got != c.asks {
			t.Errorf("an agent that can %+v: the round asks %q, want %q", c.can, got, c.asks)
		}
		plan, err := st.RoundPlan(ctx, call.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if (plan.EscalateAt != nil) != c.escalate {
			t.Errorf("an agent that can %+v: escalation at %v, want one: %v", c.can, plan.EscalateAt, c.escalate)
		}
	}
}
