package engine_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestStartCallAsksApproval: StartCall holds back the calls a rule of the
// server's applies to, as the rule sees them: "destructive" by the tool's
// annotations as the server last listed it (an unlisted tool counts as
// destructive), a condition on the agent. A read-only tool goes to the
// server at once; an approved call goes to the server, sent by Decide.
func TestStartCallAsksApproval(t *testing.T) {
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	srv := httptest.NewServer(demo.Handler(demo.Options{Secret: []byte("approvals demo")}))
	t.Cleanup(srv.Close)
	server, err := st.UpsertServer(ctx, "demo", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "bob"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	tools := json.RawMessage(`[{"name": "current_time", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
		{"name": "confirm_delete", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}]`)
	if err := st.SetServerTools(ctx, server.ID, tools, tools, "2026-07-28", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	policy := approvals.MustParse(`[{"tools": ["current_time"], "when": "caller.agent == 'claude-code'", "ask": "bob"},
		{"tools": "destructive", "ask": "bob"}]`)
	if err := st.SetServerApprovals(ctx, "demo", policy, store.AuditEntry{Actor: "admin", Action: "server.approvals", Target: "demo"}); err != nil {
		t.Fatal(err)
	}
	mc := mcpclient.New(mcpclient.Options{RequestTimeout: 5 * time.Second})
	eng := startEngine(t, pool, st, mc, engine.Config{RoundTTL: time.Hour,
		Capabilities: mcpclient.Capabilities{FormElicitation: true}}, slog.New(slog.NewTextHandler(io.Discard, nil)))

	start := func(tool string, agent *store.Agent) *store.Call {
		t.Helper()
		call, err := eng.StartCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool,
			Target: tool, Arguments: json.RawMessage(`{"path": "/tmp/x"}`), Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		return call
	}
	for _, c := range []struct {
		tool  string
		agent *store.Agent
		asks  bool
	}{
		{"current_time", nil, false}, // read-only, and no agent
		{"confirm_delete", nil, true},
		{"select_tags", nil, true}, // never listed: destructive by the spec's defaults
		{"current_time", &store.Agent{Name: "claude-code", Protocol: "2026-07-28"}, true},
		{"current_time", &store.Agent{Name: "cursor", Protocol: "2026-07-28"}, false},
	} {
		if got := start(c.tool, c.agent); (got.Status == store.CallApprovalRequired) != c.asks {
			t.Errorf("%s (agent %v): %s; asks %v", c.tool, c.agent, got.Status, c.asks)
		}
	}

	call := start("confirm_delete", nil)
	if _, err := eng.Decide(ctx, store.ApprovalDecision{Call: call.ID, By: "bob", Decision: store.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	// The demo's confirm_delete asks first: the server got the call.
	waitFor(t, st, call.ID, store.CallInputRequired, 1)
	if _, err := eng.Decide(ctx, store.ApprovalDecision{Call: call.ID, By: "bob", Decision: "maybe"}); err == nil {
		t.Error("a decision that is neither approve nor decline was taken")
	}
}
