package journeys

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcptest"
)

// listener is a 2025-11-25 agent (the go-sdk client) that notes the log
// messages and the progress it hears.
type listener struct {
	mu       sync.Mutex
	logs     []string // "level data"
	progress []string // "progress/total message"
}

func (l *listener) connect(t *testing.T, rt *router, server string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			l.mu.Lock()
			l.logs = append(l.logs, fmt.Sprintf("%s %v", req.Params.Level, req.Params.Data))
			l.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			l.mu.Lock()
			l.progress = append(l.progress, fmt.Sprintf("%v/%v %s", req.Params.Progress, req.Params.Total, req.Params.Message))
			l.mu.Unlock()
		},
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "log-reader", Version: "1"}, opts)
	transport := &mcp.StreamableClientTransport{Endpoint: "http://rounds.invalid/mcp/" + server, HTTPClient: &http.Client{Transport: rt}}
	cs, err := client.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// take returns what the agent heard since last taken.
func (l *listener) take() (logs, progress []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	logs, progress = l.logs, l.progress
	l.logs, l.progress = nil, nil
	return logs, progress
}

// TestHandshakeAgentHearsTheServersLogs: a 2025-11-25 agent that set a log
// level hears the server's log messages of that level and above during
// its calls, in order, on its call's stream, and the server's progress as
// the server said it: the level is set on one instance, and the calls
// are held on either, and the server called from either (where River
// runs the call's request: mostly the instance holding the call).
// Below the level it set, it hears none.
func TestHandshakeAgentHearsTheServersLogs(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "everything=" + mcptest.EverythingStateful(t)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	rt := &router{token: newToken(t, db, "admin")}
	rt.to(a.URL, a.URL, a.URL)
	agent := &listener{}
	cs := agent.connect(t, rt, "everything")
	ranOn := func(tool string) string {
		var id string
		queryRow(t, db, `select a.instance from attempts a join calls c on c.id = a.call_id
			where c.target = $1 order by c.created_at desc limit 1`, []any{tool}, &id)
		return id
	}
	heard := func(want int) (logs, progress []string) {
		t.Helper()
		eventually(t, 10*time.Second, func() error {
			agent.mu.Lock()
			n := len(agent.logs)
			agent.mu.Unlock()
			if n < want {
				return fmt.Errorf("%d log messages", n)
			}
			return nil
		})
		return agent.take()
	}

	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	rt.to(a.URL, b.URL, a.URL)
	if got := callText(t, cs, "test_tool_with_logging", map[string]any{}); got == "" {
		t.Fatal("no result")
	}
	if logs, _ := heard(0); len(logs) > 0 {
		t.Errorf("below the level it set (warning), the agent heard %q", logs)
	}

	rt.to(a.URL, a.URL, a.URL)
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"info Tool execution started", "info Tool processing data", "info Tool execution completed"}
	instances := map[string]string{a.InstanceID(): "A", b.InstanceID(): "B"}
	crossed := 0
	for i, held := range []*instance{b, a, b, a, b, a} {
		rt.to(a.URL, held.URL, a.URL)
		callText(t, cs, "test_tool_with_logging", map[string]any{})
		if logs, _ := heard(len(want)); !slices.Equal(logs, want) {
			t.Errorf("call %d: the agent heard %q, want %q", i, logs, want)
		}
		if server := instances[ranOn("test_tool_with_logging")]; server != instances[held.InstanceID()] {
			crossed++
			t.Logf("call %d: held on %s, the server called from %s", i, instances[held.InstanceID()], server)
		}
	}
	t.Logf("%d of 6 calls were held on one instance while the other called the server", crossed)

	rt.to(a.URL, b.URL, a.URL)
	params := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
	params.SetProgressToken("p-1")
	if _, err := cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	var progress []string
	eventually(t, 10*time.Second, func() error {
		_, p := agent.take()
		progress = append(progress, p...)
		if len(progress) < 3 {
			return fmt.Errorf("progress %q", progress)
		}
		return nil
	})
	if got := strings.Join(progress, "|"); got != "0/100 Completed step 0 of 100|50/100 Completed step 50 of 100|100/100 Completed step 100 of 100" {
		t.Errorf("the agent heard the progress %q, want the server's 0, 50 and 100 of 100", got)
	}
}
