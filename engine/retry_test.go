package engine_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestRetryWindow: a server that keeps answering 503 with Retry-After is
// tried again no sooner than it asked, the call says when meanwhile, and
// once the window is over the call fails with the answers kept and the
// manual retry offered.
func TestRetryWindow(t *testing.T) {
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tries []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries = append(tries, time.Now())
		mu.Unlock()
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
	startEngine(t, pool, st, mc, engine.Config{RetryWindow: 3 * time.Second, RetryBackoff: 100 * time.Millisecond},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool, Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var sawRetry bool
	deadline := time.Now().Add(30 * time.Second)
	for !call.Finished() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if call, err = st.Call(ctx, call.ID); err != nil {
			t.Fatal(err)
		}
		if call.RetryAt != nil {
			sawRetry = true
			if call.RetryReason == nil || *call.RetryReason != "HTTP 503 Service Unavailable" {
				t.Errorf("reason = %v", call.RetryReason)
			}
		}
	}
	if call.Status != store.CallFailed || !call.Retryable || call.Error == nil ||
		!strings.Contains(*call.Error, "HTTP 503") || !strings.Contains(*call.Error, "answers are kept") {
		t.Fatalf("after the window: %s %v %v", call.Status, call.Retryable, call.Error)
	}
	if !sawRetry || call.RetryAt != nil {
		t.Errorf("saw the retry time: %v; left after failing: %v", sawRetry, call.RetryAt)
	}
	mu.Lock()
	defer mu.Unlock()
	// A try may be more than one HTTP request (discovery falls back to the
	// handshake); requests within 200ms of each other are one try. Between
	// tries, at least the second the server asked for.
	var starts []time.Time
	for i, at := range tries {
		if i == 0 || at.Sub(tries[i-1]) > 200*time.Millisecond {
			starts = append(starts, at)
		}
	}
	if len(starts) < 3 {
		t.Fatalf("%d tries in a 3s window, want several", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 900*time.Millisecond {
			t.Errorf("try %d came %s after the one before; the server asked for 1s", i, gap)
		}
	}
}
