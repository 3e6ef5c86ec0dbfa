package engine_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/mcptest"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestProgressWhileRunning: a tool that says how far it got, step by step,
// on its response stream. The request carries a progressToken; what the
// server says is kept on the call while it runs, read on another instance,
// and no longer shown once the call is complete.
func TestProgressWhileRunning(t *testing.T) {
	pool := storetest.NewPool(t)
	rep := mcptest.NewReporter(t, 4, 600*time.Millisecond)
	runs := startInstanceWith(t, pool, "runs", engine.Config{}, 20*time.Second)
	reads := startInstance(t, pool, "reads", engine.Config{})
	reads.eng.Stop(t.Context())
	ctx := t.Context()
	server, err := runs.st.UpsertServer(ctx, "reporter", rep.URL)
	if err != nil {
		t.Fatal(err)
	}
	call, err := runs.st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool,
		Target: "long_report", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	eventually(t, 15*time.Second, func() error {
		c, err := reads.st.Call(ctx, call.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p := c.RunningProgress(); p != nil {
			seen[p.Message] = true
			if p.Total == nil || *p.Total != 4 || p.Progress < 1 || p.Progress > 4 {
				t.Errorf("progress %+v", p)
			}
		}
		if !c.Finished() {
			return errors.New("the call did not complete")
		}
		if c.Status != store.CallComplete || c.RunningProgress() != nil {
			t.Fatalf("the call ended %s, progress still shown: %v", c.Status, c.RunningProgress())
		}
		return nil
	})
	if len(seen) == 0 {
		t.Error("no progress was read while the call ran")
	}
	for msg := range seen {
		if !strings.HasPrefix(msg, "Step ") || !strings.HasSuffix(msg, " of 4 <b>") {
			t.Errorf("progress read as %q; want the server's words as sent", msg)
		}
	}
	tokens := rep.Tokens()
	if len(tokens) != 1 || !strings.HasPrefix(string(tokens[0]), `"rounds-`) {
		t.Errorf("the request's progressToken: %s", tokens)
	}
}

// TestProgressOfHandshakeServer: a 2025-11-25 server says how far its tool
// got, in the call's held session; what it said last is kept on the call.
func TestProgressOfHandshakeServer(t *testing.T) {
	pool := storetest.NewPool(t)
	inst := startInstance(t, pool, "runs", engine.Config{})
	ctx := t.Context()
	server, err := inst.st.UpsertServer(ctx, "sessions", mcptest.EverythingStateful(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.st.SetServerProtocol(ctx, "sessions", mcpclient.ProtocolHandshake); err != nil {
		t.Fatal(err)
	}
	call, err := inst.st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool,
		Target: "test_tool_with_progress", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, func() error {
		c, err := inst.st.Call(ctx, call.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Finished() {
			return errors.New("the call did not end")
		}
		if c.Status != store.CallComplete {
			t.Fatalf("the call ended %s", c.Status)
		}
		var p store.Progress
		if err := json.Unmarshal(c.Progress, &p); err != nil || p.Progress != 100 || p.Total == nil || *p.Total != 100 {
			t.Fatalf("the server's last progress kept as %s", c.Progress)
		}
		return nil
	})
}
