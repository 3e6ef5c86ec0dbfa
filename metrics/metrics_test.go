package metrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/metrics"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// scrape reads /metrics as Prometheus does, and returns each sample's
// value by its name and labels as the exposition writes them, such as
// rounds_pending{server="demo"}.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// round starts a call on srv with a round 1 that expires at expires, and
// returns the call's id.
func round(t *testing.T, st *store.Store, srv *store.Server, expires time.Time) string {
	t.Helper()
	ctx := context.Background()
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	err = st.AddRound(ctx, call.ID, 0, store.NewRound{
		InputRequests: json.RawMessage(`{"q":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}}`),
		ExpiresAt:     expires,
	})
	if err != nil {
		t.Fatal(err)
	}
	return call.ID
}

func answer(t *testing.T, st *store.Store, callID, responses string) {
	t.Helper()
	_, _, err := st.AnswerChecked(context.Background(), store.Answer{CallID: callID, Seq: 1, Person: "ada",
		Decide: func(store.Answering) (store.Decision, error) {
			return store.Decision{Responses: json.RawMessage(responses), By: "ada"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestExposition: /metrics shows the requests this instance served and
// sent, and the rounds and the job queue as the database has them; with
// the database gone, the rest still shows.
func TestExposition(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(st, nil, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)

	idle := scrape(t, srv.URL)
	for k, v := range idle {
		if strings.HasPrefix(k, "rounds_") && !strings.HasPrefix(k, "rounds_job_queue_depth{") {
			t.Errorf("before anything happened: %s %v", k, v)
		}
	}
	// The app's jobs are graphed without gaps: at zero when idle.
	for _, kind := range []string{"mcp_request", "round_expiry"} {
		for _, state := range []string{"available", "scheduled", "retryable", "running"} {
			k := `rounds_job_queue_depth{kind="` + kind + `",state="` + state + `"}`
			if v, ok := idle[k]; !ok || v != 0 {
				t.Errorf("idle: %s = %v (listed %v), want 0", k, v, ok)
			}
		}
	}
	if _, ok := idle["go_goroutines"]; !ok {
		t.Error("the Go runtime's metrics are not exposed")
	}

	m.ObserveHTTP("GET", "/calls/:id", http.StatusOK, 30*time.Millisecond)
	m.ObserveHTTP("GET", "/calls/:id", http.StatusOK, 3*time.Second)
	m.ObserveHTTP("POST", "/calls/:id/rounds/:seq", http.StatusSeeOther, time.Millisecond)
	m.ObserveMCP("demo", "tools/call", store.AttemptInputRequired, 200*time.Millisecond)
	m.ObserveMCP("demo", "tools/call", store.AttemptError, 2*time.Second)
	var none *metrics.Metrics // an engine without metrics counts nothing, and does not fail
	none.ObserveHTTP("GET", "/", http.StatusOK, time.Millisecond)
	none.ObserveMCP("demo", "tools/call", store.AttemptError, time.Millisecond)

	ctx := context.Background()
	demo, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	round(t, st, demo, time.Now().Add(time.Hour))    // waiting
	round(t, st, demo, time.Now().Add(-time.Minute)) // past its deadline
	answer(t, st, round(t, st, demo, time.Now().Add(time.Hour)), `{"q":{"action":"accept","content":{}}}`)
	answer(t, st, round(t, st, demo, time.Now().Add(time.Hour)), `{"q":{"action":"decline"}}`)

	got := scrape(t, srv.URL)
	for k, want := range map[string]float64{
		`rounds_http_request_duration_seconds_count{code="200",method="GET",route="/calls/:id"}`:                2,
		`rounds_http_request_duration_seconds_bucket{code="200",method="GET",route="/calls/:id",le="0.05"}`:     1,
		`rounds_http_request_duration_seconds_count{code="303",method="POST",route="/calls/:id/rounds/:seq"}`:   1,
		`rounds_mcp_request_duration_seconds_count{method="tools/call",outcome="input_required",server="demo"}`: 1,
		`rounds_mcp_request_duration_seconds_count{method="tools/call",outcome="error",server="demo"}`:          1,
		`rounds_mcp_request_errors_total{method="tools/call",server="demo"}`:                                    1,
		`rounds_pending{server="demo"}`:                                1,
		`rounds_finished_total{outcome="answered",server="demo"}`:      1,
		`rounds_finished_total{outcome="declined",server="demo"}`:      1,
		`rounds_finished_total{outcome="expired",server="demo"}`:       1,
		`rounds_time_to_answer_seconds_count{server="demo"}`:           2,
		`rounds_time_to_answer_seconds_bucket{server="demo",le="5"}`:   2,
		`rounds_job_queue_depth{kind="mcp_request",state="available"}`: 6,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (listed %v), want %v", k, v, ok, want)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "rounds_http_request_duration_seconds_count{") && strings.Contains(k, `route="/"`) {
			t.Errorf("a request not counted is listed: %s", k)
		}
	}

	// A failing database drops what it gives from the scrape, not the
	// scrape: what this instance counts is still there.
	pool.Close()
	down := scrape(t, srv.URL)
	if down[`rounds_mcp_request_errors_total{method="tools/call",server="demo"}`] != 1 {
		t.Error("with the database down, the instance's own counts are gone")
	}
	for k := range down {
		if strings.HasPrefix(k, "rounds_pending") || strings.HasPrefix(k, "rounds_finished_total") || strings.HasPrefix(k, "rounds_job_queue_depth") {
			t.Errorf("with the database down: %s is still listed", k)
		}
	}
}

// TestAllowed: only the configured networks scrape without a token, IPv4
// addresses written as IPv6 included.
func TestAllowed(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}, slog.New(slog.DiscardHandler))
	for _, tt := range []struct {
		name string
		addr string
		want bool
	}{
		{"InRange", "10.1.2.3", true},
		{"Mapped", "::ffff:10.1.2.3", true},
		{"Loopback6", "::1", true},
		{"Outside", "192.168.1.1", false},
		{"Loopback4NotListed", "127.0.0.1", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.Allowed(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Errorf("Allowed(%s) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}
