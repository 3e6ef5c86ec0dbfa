package journeys

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// adminScrape fetches /metrics from base, with an API token when given.
func adminScrape(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue finds a sample by name and labels in the text format.
func metricValue(body, name string, labels map[string]string) (float64, bool) {
	sample := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(?:\{(.*)\})? (\S+)$`)
	pair := regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)
	for line := range strings.SplitSeq(body, "\n") {
		m := sample.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		got := map[string]string{}
		for _, p := range pair.FindAllStringSubmatch(m[1], -1) {
			got[p[1]] = p[2]
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		if match {
			v, err := strconv.ParseFloat(m[2], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestMetricsCounts scripts 3 answered, 1 declined, 1 cancelled and 1
// expired round on server demo (the last through a one-second lifetime set
// on the admin server page), and finds exactly those counts in /metrics.
// Round counts come from the database, so both instances report them.
func TestMetricsCounts(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	demoURL := demoServer(t, nil)
	a := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoURL, "EXPIRY_INTERVAL": "200ms"}, nil)
	// B lets no address scrape without an admin's token.
	b := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoURL, "METRICS_ALLOW": "192.0.2.1/32"}, nil)
	c := newClient(t, db)
	c.login(a.URL, "admin", adminPassword)

	answers := []string{
		`{"confirm":{"action":"accept","content":{"confirm":true}}}`,
		`{"confirm":{"action":"accept","content":{"confirm":false}}}`,
		`{"confirm":{"action":"accept","content":{"confirm":true}}}`,
		`{"confirm":{"action":"decline"}}`,
		`{"confirm":{"action":"cancel"}}`,
	}
	var ids []string
	for range answers {
		ids = append(ids, c.startCall(a.URL, "confirm_delete", `{"path":"/x"}`).ID)
	}
	for i, id := range ids {
		c.waitFor(a.URL, id, 10*time.Second, roundIs(1))
		if status, body := c.answer(a.URL, id, 1, answers[i]); status != http.StatusAccepted {
			t.Fatalf("answer %d: %d %s", i, status, body)
		}
	}
	status, body := c.post(a.URL+"/admin/servers/demo", url.Values{"url": {demoURL}, "round_ttl": {"1s"}})
	if status != http.StatusSeeOther {
		t.Fatalf("set the round lifetime: %d %s", status, body)
	}
	last := c.startCall(a.URL, "confirm_delete", `{"path":"/y"}`)
	if done := c.waitFor(a.URL, last.ID, 15*time.Second, isDone); done.Status != "expired" {
		t.Fatalf("the last call is %s, want expired", done.Status)
	}
	for _, id := range ids {
		c.waitFor(a.URL, id, 10*time.Second, isDone)
	}

	status, metrics := adminScrape(t, a.URL, "")
	if status != http.StatusOK {
		t.Fatalf("scrape from loopback: %d %s", status, metrics)
	}
	for outcome, want := range map[string]float64{"answered": 3, "declined": 1, "cancelled": 1, "expired": 1} {
		got, ok := metricValue(metrics, "rounds_finished_total", map[string]string{"server": "demo", "outcome": outcome})
		if !ok || got != want {
			t.Errorf("rounds_finished_total{outcome=%q} = %v (found %v), want %v", outcome, got, ok, want)
		}
	}
	if got, _ := metricValue(metrics, "rounds_time_to_answer_seconds_count", map[string]string{"server": "demo"}); got != 5 {
		t.Errorf("rounds_time_to_answer_seconds_count = %v, want 5", got)
	}
	if got, _ := metricValue(metrics, "rounds_pending", map[string]string{"server": "demo"}); got != 0 {
		t.Errorf("rounds_pending = %v, want 0", got)
	}
	if got, _ := metricValue(metrics, "rounds_http_request_duration_seconds_count",
		map[string]string{"route": "/api/v1/calls/:id/rounds/:seq", "method": "POST", "code": "202"}); got != 5 {
		t.Errorf("answers served = %v, want 5", got)
	}
	if _, ok := metricValue(metrics, "rounds_job_queue_depth", map[string]string{"kind": "mcp_request", "state": "available"}); !ok {
		t.Error("no job queue depth in the scrape")
	}
	if _, ok := metricValue(metrics, "go_goroutines", nil); !ok {
		t.Error("no Go runtime metrics in the scrape")
	}

	// B: the address is not allowed; an admin's token is, a user's is not.
	if status, _ := adminScrape(t, b.URL, ""); status != http.StatusNotFound {
		t.Errorf("scrape from a disallowed address: %d, want 404", status)
	}
	addUser(t, db, "carol", "carol's long password")
	if status, _ := adminScrape(t, b.URL, newToken(t, db, "carol")); status != http.StatusNotFound {
		t.Errorf("scrape with a non-admin's token: %d, want 404", status)
	}
	status, metrics = adminScrape(t, b.URL, c.token)
	if status != http.StatusOK {
		t.Fatalf("scrape with an admin's token: %d", status)
	}
	if got, _ := metricValue(metrics, "rounds_finished_total", map[string]string{"server": "demo", "outcome": "answered"}); got != 3 {
		t.Errorf("on B, answered = %v, want the same 3", got)
	}
	// Requests are counted by the instance that sent them: either may
	// have run any job, so the two add up.
	_, metricsA := adminScrape(t, a.URL, "")
	requests := 0.0
	for _, body := range []string{metricsA, metrics} {
		n, _ := metricValue(body, "rounds_mcp_request_duration_seconds_count",
			map[string]string{"server": "demo", "method": "tools/call", "outcome": "input_required"})
		requests += n
	}
	if requests != 6 {
		t.Errorf("MCP requests answered with a round, on A and B together = %v, want 6", requests)
	}
}
