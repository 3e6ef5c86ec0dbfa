package engine_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestRetryWindow: a server that keeps answering 503 with Retry-After is
// tried again no sooner than it asked, the call says when meanwhile, and
// once the window is over (the engine's clock is moved past it rather
// than waited for) the call fails with the answers kept and the manual
// retry offered. A server asking to wait past the window's end is not
// tried sooner: the call fails at once.
func TestRetryWindow(t *testing.T) {
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tries []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A try begins with discovery (then falls back to the handshake).
		var req struct{ Method string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Method == "server/discover" {
			mu.Lock()
			tries = append(tries, time.Now())
			mu.Unlock()
		}
		w.Header().Set("Retry-After", "1")
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	ctx := t.Context()
	server, err := st.UpsertServer(ctx, "down", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	mc := mcpclient.New(mcpclient.Options{RequestTimeout: 2 * time.Second})
	var now clock
	const window = 10 * time.Minute
	startEngine(t, pool, st, mc, engine.Config{RetryWindow: window, RetryBackoff: 100 * time.Millisecond, Now: now.Now},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool, Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Once the first try is put off, the clock moves past the window.
	var retryAt *time.Time
	eventually(t, 30*time.Second, func() error {
		if call, err = st.Call(ctx, call.ID); err != nil {
			t.Fatal(err)
		}
		if call.RetryAt != nil && retryAt == nil {
			if call.RetryReason == nil || *call.RetryReason != "HTTP 503 Service Unavailable" {
				t.Errorf("reason = %v", call.RetryReason)
			}
			retryAt = call.RetryAt
			now.Skip(window)
		}
		if !call.Finished() {
			return fmt.Errorf("the call is still %s", call.Status)
		}
		return nil
	})
	if call.Status != store.CallFailed || !call.Retryable || call.Error == nil ||
		!strings.Contains(*call.Error, "HTTP 503") || !strings.Contains(*call.Error, "answers are kept") {
		t.Fatalf("after the window: %s %v %v", call.Status, call.Retryable, call.Error)
	}
	if retryAt == nil || call.RetryAt != nil {
		t.Errorf("saw the retry time: %v; left after failing: %v", retryAt, call.RetryAt)
	}
	mu.Lock()
	defer mu.Unlock()
	// Between tries, at least the second the server asked for.
	starts := tries
	if len(starts) < 2 {
		t.Fatalf("%d tries, want one more after the first was put off", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 900*time.Millisecond {
			t.Errorf("try %d came %s after the one before; the server asked for 1s", i, gap)
		}
	}

	// A server asking to be left alone past the window's end is not tried
	// sooner than it asked: the call fails at once, its answers kept.
	var later atomic.Int32
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Method string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Method == "server/discover" {
			later.Add(1)
		}
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "come back in an hour", http.StatusServiceUnavailable)
	}))
	t.Cleanup(busy.Close)
	busyServer, err := st.UpsertServer(ctx, "busy", busy.URL)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	call, err = st.CreateCall(ctx, store.NewCall{ServerID: busyServer.ID, Owner: "ada", Method: mcpclient.MethodCallTool, Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if call, err = st.Call(ctx, call.ID); err != nil {
			t.Fatal(err)
		}
		if !call.Finished() {
			return fmt.Errorf("the call is still %s", call.Status)
		}
		return nil
	})
	if call.Status != store.CallFailed || !call.Retryable || later.Load() != 1 || time.Since(started) > 10*time.Second {
		t.Errorf("a server asking for an hour, with a 10-minute window: %s (retryable %v) after %d tries and %s; want failed at once after one, retryable",
			call.Status, call.Retryable, later.Load(), time.Since(started).Round(time.Millisecond))
	}
}
