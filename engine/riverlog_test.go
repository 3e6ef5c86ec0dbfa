package engine_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// lockedBuffer is a log both the engine and the test use at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestHeldCallIsNotStuck: a 2025-11-25 call waits for a person on its
// held session past River's job timeout and stuck threshold (shortened to
// 1 s and 200 ms). River's check fires, and the log says the call waits
// for a person, with its id, never "Job appears to be stuck".
func TestHeldCallIsNotStuck(t *testing.T) {
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// A question nobody answers must not outlive the test.
	life, stop := context.WithCancel(context.Background())
	server := mcp.NewServer(&mcp.Implementation{Name: "old-timer", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "ask_name", Description: "Asks for a name mid-call."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer context.AfterFunc(life, cancel)()
			defer cancel()
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(func() {
		// The session's own streams are left open by a stopped engine.
		srv.CloseClientConnections()
		srv.Close()
	})
	t.Cleanup(stop)
	old, err := st.UpsertServer(ctx, "old", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetServerProtocol(ctx, "old", mcpclient.ProtocolHandshake); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	mc := mcpclient.New(mcpclient.Options{RequestTimeout: 5 * time.Second})
	startEngine(t, pool, st, mc, engine.Config{RequestTimeout: time.Second, JobStuckThreshold: 200 * time.Millisecond,
		HeldTimeout: time.Minute, Capabilities: mcpclient.Capabilities{FormElicitation: true}},
		slog.New(slog.NewJSONHandler(&logs, nil)))
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: old.ID, Owner: "ada", Method: mcpclient.MethodCallTool, Target: "ask_name"})
	if err != nil {
		t.Fatal(err)
	}
	said := func() bool {
		l := logs.String()
		return strings.Contains(l, "appears to be stuck") || strings.Contains(l, "waiting for a person on a held session")
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(20 * time.Second); !said(); <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("River's stuck-job check never fired; the log:\n%s", logs.String())
		}
	}
	if c, _ := st.Call(ctx, call.ID); c == nil || c.Status != store.CallInputRequired {
		t.Fatalf("the call is %+v; want it waiting for a person", c)
	}
	l := logs.String()
	if strings.Contains(l, "appears to be stuck") {
		t.Errorf("a held call waiting for a person is logged as a stuck job:\n%s", l)
	}
	if !strings.Contains(l, `"msg":"waiting for a person on a held session (not stuck)"`) || !strings.Contains(l, `"call_id":"`+call.ID+`"`) {
		t.Errorf("the log does not say the call waits for a person on a held session:\n%s", l)
	}
	// Cancelled, the question is cancelled towards the server and the
	// session ends, so the engine stops at once.
	if err := st.CancelCall(ctx, call.ID, store.AuditEntry{Actor: "ada", Action: "call.cancelled", Target: call.ID}); err != nil {
		t.Fatal(err)
	}
}
