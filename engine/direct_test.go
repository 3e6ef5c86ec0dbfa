package engine_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestDirectSendsSafetyNet: a request the committing instance never sent
// (it died after the commit) is sent by River once its job falls due, on
// another instance, once; and a stopping instance hands the requests it
// commits to River at once, not when their jobs fall due.
func TestDirectSendsSafetyNet(t *testing.T) {
	pool := storetest.NewPool(t)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		w.Header().Set("Content-Type", "application/json")
		switch msg.Method {
		case "server/discover":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"quick","version":"1"},"resultType":"complete"}}`))
		case "tools/call":
			calls.Add(1)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"done"}],"resultType":"complete"}}`))
		default:
			http.Error(w, "not here", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	const timeout = time.Second // the safety net falls due 6 s after the commit
	runs := startInstanceWith(t, pool, "runs", engine.Config{}, timeout)
	dies := startInstanceWith(t, pool, "dies", engine.Config{}, timeout)
	ctx := t.Context()
	server, err := runs.st.UpsertServer(ctx, "quick", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	newCall := store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool, Target: "report",
		Arguments: json.RawMessage(`{}`)}

	// Committed with its job scheduled, and never sent: its instance died.
	committed := time.Now()
	orphan, _, err := dies.st.CreateCallDirect(ctx, newCall, timeout+5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dies.stop()
	// Its job waits as the safety net, not due now: no worker takes it
	// before a request sent at once would long have been answered.
	var state string
	var dueAfter time.Duration
	if err := pool.QueryRow(ctx, `select state::text, scheduled_at - created_at from river_job
		where kind = 'mcp_request' and args->>'call_id' = $1`, orphan.ID).Scan(&state, &dueAfter); err != nil {
		t.Fatal(err)
	}
	if state != "scheduled" || dueAfter != timeout+5*time.Second {
		t.Fatalf("the orphan's job is %s, due %s after its insert; want scheduled, due %s after", state, dueAfter, timeout+5*time.Second)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the server saw %d requests before the safety net fell due", n)
	}
	waitFor(t, runs.st, orphan.ID, store.CallComplete, 0)
	if since := time.Since(committed); since < timeout+5*time.Second {
		t.Errorf("River sent it %s after the commit, before its job fell due", since)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server saw %d requests; want 1", n)
	}

	// The stopped instance's engine sends nothing itself: River does, at once.
	handed := time.Now()
	call, err := dies.eng.StartCall(ctx, newCall)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, runs.st, call.ID, store.CallComplete, 0)
	var by string
	var ranAfter time.Duration
	if err := pool.QueryRow(ctx, `select attempted_by[cardinality(attempted_by)], attempted_at - created_at from river_job
		where args->>'call_id' = $1`, call.ID).Scan(&by, &ranAfter); err != nil {
		t.Fatal(err)
	}
	if by != "runs" || ranAfter >= timeout+5*time.Second {
		t.Errorf("the handed-over job ran on %q %s after its insert; want on runs, before it fell due", by, ranAfter)
	}
	t.Logf("handed over and done in %s", time.Since(handed).Round(time.Millisecond))
	if n := calls.Load(); n != 2 {
		t.Errorf("the server saw %d requests; want 2", n)
	}
}
