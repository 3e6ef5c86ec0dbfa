package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestStopClosesTheRequest: a 2026-07-28 tool that works for a long while
// on its response stream. The call is cancelled from another instance
// while its request runs; the instance sending it closes the stream, which
// is how the server learns to stop, and the call stays cancelled.
func TestStopClosesTheRequest(t *testing.T) {
	pool := storetest.NewPool(t)
	var closedAt atomic.Int64 // when the server saw its tools/call closed (unix nanoseconds)
	started := make(chan struct{}, 1)
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
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"slow","version":"1"},"resultType":"complete"}}`))
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			started <- struct{}{}
			select {
			case <-r.Context().Done():
				closedAt.Store(time.Now().UnixNano())
			case <-time.After(time.Minute):
				_, _ = w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(msg.ID) + ",\"result\":{\"content\":[],\"resultType\":\"complete\"}}\n\n"))
			}
		default:
			http.Error(w, "not here", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	// The request may take long: the stop, not a timeout, must end it.
	runs := startInstanceWith(t, pool, "runs", engine.Config{}, 2*time.Minute)
	other := startInstanceWith(t, pool, "other", engine.Config{}, 2*time.Minute)
	ctx := t.Context()
	server, err := runs.st.UpsertServer(ctx, "slow", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	other.eng.Stop(ctx) // its workers take nothing; it only cancels
	call, err := runs.st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool,
		Target: "report", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the server")
	}
	// The server works a while: past a heartbeat that finds the request
	// running.
	eventually(t, 10*time.Second, func() error {
		list, err := runs.st.Instances(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range list {
			if in.ID == "runs" && in.JobsRunning == 1 {
				return nil
			}
		}
		return errors.New("no heartbeat of the instance found the request running")
	})
	if closedAt.Load() != 0 {
		t.Fatal("the request was closed before the call was cancelled")
	}
	stopped := time.Now()
	if err := other.st.CancelCall(ctx, call.ID, store.AuditEntry{Instance: "other", Actor: "ada", Action: "call.cancelled", Target: call.ID}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if closedAt.Load() == 0 {
			return errors.New("the server's request was never closed after the call was cancelled")
		}
		return nil
	})
	t.Logf("closed %s after the cancel", time.Unix(0, closedAt.Load()).Sub(stopped).Round(time.Millisecond))
	// The call stays cancelled once the request's job has finished, with
	// whatever the closed request came back with.
	eventually(t, 10*time.Second, func() error {
		var state string
		if err := pool.QueryRow(ctx, `select state::text from river_job where kind = 'mcp_request' and args->>'call_id' = $1`,
			call.ID).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state != "completed" {
			return fmt.Errorf("the request's job is %s", state)
		}
		return nil
	})
	c, err := runs.st.Call(ctx, call.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != store.CallCancelled || !strings.Contains(deref(c.Error), "cancelled") {
		t.Errorf("the call is %s (%q) after the stop", c.Status, deref(c.Error))
	}
}
