package journeys

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHeldSessionReconnectsAfterGracefulClose runs a tool on a 2025-11-25
// server that closes its SSE stream gracefully before it answers (SEP-1699,
// with a retry field), as a server shedding long-lived connections does. The
// held session reconnects with GET and Last-Event-ID and gets the result.
func TestHeldSessionReconnectsAfterGracefulClose(t *testing.T) {
	t.Parallel()
	reconnected := make(chan struct{})
	server := mcp.NewServer(&mcp.Implementation{Name: "closer", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			if req.Extra != nil && req.Extra.CloseSSEStream != nil {
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
			}
			// The answer comes after the stream closed, once the client is
			// back for it.
			select {
			case <-reconnected:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(10 * time.Second):
				return nil, nil, errors.New("the client did not come back for the answer")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done after a reconnect"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	back := sync.OnceFunc(func() { close(reconnected) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			back()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "closer[2025-11-25]=" + srv.URL}, nil)
	c := newClient(t, db)
	call := c.start(inst.URL, `{"server":"closer","tool":"slow"}`)
	done := c.waitFor(inst.URL, call.ID, 15*time.Second, isDone)
	if done.Status != "complete" || !strings.Contains(resultText(t, done.Result), "done after a reconnect") {
		t.Fatalf("call ended %s (%+v), result %s", done.Status, done.Error, done.Result)
	}
}
