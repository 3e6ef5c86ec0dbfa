package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/handlers"
)

// adminPool opens the test's database for checks the pages do not show.
func adminPool(t *testing.T, db string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// adminRoutes lists every admin route the app registers, so a new one is
// covered by TestAdminHiddenFromOthers without being added there.
func adminRoutes(t *testing.T) [][2]string {
	t.Helper()
	var out [][2]string
	for _, r := range handlers.New(handlers.Options{}).Routes().Routes() {
		if (r.Method == http.MethodGet || r.Method == http.MethodPost) &&
			(r.Path == "/admin" || strings.HasPrefix(r.Path, "/admin/")) && !strings.HasSuffix(r.Path, "*") {
			out = append(out, [2]string{r.Method, r.Path})
		}
	}
	return out
}

// TestAdminHiddenFromOthers: a person who is not an admin gets, on every
// admin route and with every method, the very 404 page of a page that
// does not exist, and nothing changes.
func TestAdminHiddenFromOthers(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	owner := newClient(t, db)
	call := owner.startCall(inst.URL, "confirm_delete", `{"path":"/a"}`)
	owner.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))

	addUser(t, db, "bob", "bob's long password")
	bob := newClient(t, db)
	bob.login(inst.URL, "bob", "bob's long password")
	_, missingGET := bob.do("GET", inst.URL+"/no-such-page", "", "")
	_, missingPOST := bob.post(inst.URL+"/no-such-page", url.Values{})

	routes := adminRoutes(t)
	if len(routes) < 20 {
		t.Fatalf("found only %d admin routes: %v", len(routes), routes)
	}
	params := strings.NewReplacer(":server", "demo", ":name", "admin", ":id", call.ID, ":seq", "1")
	for _, r := range append(routes, [2]string{"GET", "/admin/"}, [2]string{"GET", "/admin/nothing-here"}) {
		path := params.Replace(r[1])
		t.Run(r[0]+path, func(t *testing.T) {
			var status int
			var body, want []byte
			if r[0] == http.MethodGet {
				status, body = bob.do("GET", inst.URL+path, "", "")
				want = missingGET
			} else {
				status, body = bob.post(inst.URL+path, url.Values{
					"enabled": {"false"}, "disabled": {"true"}, "admin": {"false"}, "password": {"taken over!"},
					"url": {"http://evil.example/mcp"}, "name": {"evil"},
				})
				want = missingPOST
			}
			if status != http.StatusNotFound || !bytes.Equal(body, want) {
				t.Errorf("status %d; want the 404 of a missing page; body:\n%s", status, body)
			}
		})
	}
	t.Run("NothingChanged", func(t *testing.T) {
		var n int
		pool := adminPool(t, db)
		err := pool.QueryRow(context.Background(), `select count(*) from audit_log where actor = 'bob' and action <> 'sign_in'`).Scan(&n)
		if err != nil || n != 0 {
			t.Errorf("bob has %d audit rows besides signing in (err %v)", n, err)
		}
		if got := owner.waitFor(inst.URL, call.ID, time.Second, roundIs(1)); got.Status != "input_required" {
			t.Errorf("the call is %s", got.Status)
		}
		admin := newClient(t, db)
		admin.login(inst.URL, "admin", adminPassword) // still an admin, same password
	})
}

// TestExpiryTwoInstances runs two instances with a one-second round
// lifetime: each due round is expired exactly once, and the person's page
// and the API say so.
func TestExpiryTwoInstances(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{
		"MCP_SERVERS": "demo=" + demoServer(t, nil), "ROUND_TTL": "1s",
		"EXPIRY_INTERVAL": "200ms", "HEARTBEAT_INTERVAL": "200ms",
	}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)
	c.login(b.URL, "admin", adminPassword)

	const calls = 6
	var ids []string
	for i := range calls {
		base := []string{a.URL, b.URL}[i%2]
		ids = append(ids, c.startCall(base, "confirm_delete", `{"path":"/tmp/`+strconv.Itoa(i)+`"}`).ID)
	}
	for i, id := range ids {
		base := []string{b.URL, a.URL}[i%2]
		done := c.waitFor(base, id, 15*time.Second, isDone)
		if done.Status != "expired" || done.Round != nil {
			t.Errorf("call %d: status %s, round %+v; want expired with no round", i, done.Status, done.Round)
		}
		status, page := c.do("GET", base+"/calls/"+id, "", "")
		if status != http.StatusOK || !bytes.Contains(page, []byte(`data-status="expired"`)) ||
			!bytes.Contains(page, []byte("expired before it was answered")) || bytes.Contains(page, []byte(`data-testid="round-form"`)) {
			t.Errorf("call %d: the person's page (%d) does not say the round expired:\n%s", i, status, page)
		}
		if status, _ := c.answer(base, id, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusConflict {
			t.Errorf("call %d: answering an expired round: %d, want 409", i, status)
		}
	}

	pool := adminPool(t, db)
	ctx := context.Background()
	rows, err := pool.Query(ctx, `select target, count(*), min(instance) from audit_log where action = 'round.expired' group by target`)
	if err != nil {
		t.Fatal(err)
	}
	expired := map[string]int{}
	ranOn := map[string]bool{}
	for rows.Next() {
		var target, instance string
		var n int
		if err := rows.Scan(&target, &n, &instance); err != nil {
			t.Fatal(err)
		}
		expired[target] = n
		ranOn[instance] = true
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for _, id := range ids {
		if expired[id] != 1 {
			t.Errorf("call %s was expired %d times, want exactly once", id, expired[id])
		}
	}
	if len(expired) != calls {
		t.Errorf("expired %d calls, want %d: %v", len(expired), calls, expired)
	}
	for inst := range ranOn {
		if inst != a.engine.Config().InstanceID && inst != b.engine.Config().InstanceID {
			t.Errorf("expired by %q, which is neither instance", inst)
		}
	}

	// Both instances beat; the instances page lists them, one as leader.
	_, page := c.do("GET", b.URL+"/admin/instances", "", "")
	for _, inst := range []*instance{a, b} {
		if !bytes.Contains(page, []byte(inst.engine.Config().InstanceID)) {
			t.Errorf("the instances page does not list %s:\n%s", inst.engine.Config().InstanceID, page)
		}
	}
	if n := bytes.Count(page, []byte(`data-state="live"`)); n != 2 {
		t.Errorf("%d live instances on the page, want 2", n)
	}
	if !bytes.Contains(page, []byte("Leader")) {
		t.Error("no instance is marked leader")
	}
}

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

// flaky makes the demo server refuse retries while fail is set.
type flaky struct{ fail atomic.Bool }

func (f *flaky) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if f.fail.Load() && bytes.Contains(body, []byte(`"inputResponses"`)) {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TestAuditTrail does every audited action through the pages and the API
// and finds a row for each, with who, what, when and where; answer
// contents are in no row and no log line. Rows cannot be changed.
func TestAuditTrail(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	f := &flaky{}
	demoURL := demoServer(t, f.wrap)
	var logs logSink
	// The refused retry fails at once, for the admin to retry it.
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoURL, "RETRY_WINDOW": "0"}, &logs)
	c := newClient(t, db)
	addUser(t, db, "dora", "dora's long password")
	person := newClient(t, db)
	person.token = newToken(t, db, "dora")

	// Signing in, failing to, and tokens.
	bad := url.Values{"username": {"admin"}, "password": {"wrong password"}}
	_, page := c.do("GET", inst.URL+"/login", "", "")
	bad.Set("csrf_token", csrfFrom(page))
	if status, _ := c.do("POST", inst.URL+"/login", "application/x-www-form-urlencoded", bad.Encode()); status != http.StatusUnauthorized {
		t.Fatalf("bad password: %d", status)
	}
	c.login(inst.URL, "admin", adminPassword)
	person.login(inst.URL, "dora", "dora's long password")
	if status, _ := c.post(inst.URL+"/tokens", url.Values{"name": {"ci"}}); status != http.StatusSeeOther {
		t.Fatalf("create token: %d", status)
	}
	_, page = c.do("GET", inst.URL+"/tokens", "", "")
	revoke := regexp.MustCompile(`/tokens/(\d+)/revoke`).FindStringSubmatch(string(page))
	if status, _ := c.post(inst.URL+revoke[0], url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", status)
	}

	// Calls and answers, by dora: through the page and through the API.
	status, _ := person.post(inst.URL+"/servers/demo/tools/collect_user_info", url.Values{})
	if status != http.StatusSeeOther {
		t.Fatalf("start from the page: %d", status)
	}
	var pageCall string
	if err := adminPool(t, db).QueryRow(context.Background(),
		`select id::text from calls where owner = 'dora' order by created_at desc limit 1`).Scan(&pageCall); err != nil {
		t.Fatal(err)
	}
	person.waitFor(inst.URL, pageCall, 10*time.Second, roundIs(1))
	status, _ = person.post(inst.URL+"/calls/"+pageCall+"/rounds/1",
		url.Values{"q0$action": {"accept"}, "q0.name": {"Zebediah Quux-Secret"}, "q0.age": {"77"}})
	if status != http.StatusSeeOther {
		t.Fatalf("answer from the page: %d", status)
	}
	declined := person.startCall(inst.URL, "approve", `{}`)
	cancelled := person.startCall(inst.URL, "approve", `{}`)
	for id, answer := range map[string]string{declined.ID: "decline", cancelled.ID: "cancel"} {
		person.waitFor(inst.URL, id, 10*time.Second, roundIs(1))
		if status, body := person.answer(inst.URL, id, 1, `{"approval":{"action":"`+answer+`"}}`); status != http.StatusAccepted {
			t.Fatalf("%s: %d %s", answer, status, body)
		}
	}

	// A failed retry, retried by the person, then by an admin.
	f.fail.Store(true)
	failing := person.startCall(inst.URL, "confirm_delete", `{"path":"/f"}`)
	person.waitFor(inst.URL, failing.ID, 10*time.Second, roundIs(1))
	person.answer(inst.URL, failing.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`)
	person.waitFor(inst.URL, failing.ID, 10*time.Second, isDone)
	if status, _ := person.post(inst.URL+"/calls/"+failing.ID+"/retry", url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("retry: %d", status)
	}
	person.waitFor(inst.URL, failing.ID, 10*time.Second, func(c apiCall) bool { return c.Status == "failed" })
	_, detail := c.do("GET", inst.URL+"/admin/calls/"+failing.ID, "", "")
	if n := bytes.Count(detail, []byte(`data-testid="attempt"`)); n != 3 {
		t.Errorf("the admin page shows %d attempts, want 3 (first request, two failed retries)", n)
	}
	if !bytes.Contains(detail, []byte("Service Unavailable")) {
		t.Errorf("the admin page does not show the attempts' error:\n%s", detail)
	}
	f.fail.Store(false)
	if status, _ := c.post(inst.URL+"/admin/calls/"+failing.ID+"/retry", url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("admin retry: %d", status)
	}
	if done := person.waitFor(inst.URL, failing.ID, 10*time.Second, isDone); done.Status != "complete" {
		t.Errorf("after the admin's retry: %s", done.Status)
	}

	// An admin expires one pending round and cancels another.
	toExpire := person.startCall(inst.URL, "approve", `{}`)
	toCancel := person.startCall(inst.URL, "approve", `{}`)
	for id, action := range map[string]string{toExpire.ID: "expire", toCancel.ID: "cancel"} {
		person.waitFor(inst.URL, id, 10*time.Second, roundIs(1))
		// The button asks first, and a confirmation without a reason is
		// asked again; neither ends anything.
		path := inst.URL + "/admin/calls/" + id + "/rounds/1/" + action
		if status, body := c.post(path, url.Values{}); status != http.StatusOK || !bytes.Contains(body, []byte(`data-testid="confirm-form"`)) {
			t.Fatalf("admin %s without confirming: %d, want the confirmation page\n%s", action, status, body)
		}
		if status, _ := c.post(path, url.Values{"confirm": {"yes"}, "reason": {"  "}}); status != http.StatusUnprocessableEntity {
			t.Fatalf("admin %s without a reason: %d, want 422", action, status)
		}
		if got := person.waitFor(inst.URL, id, time.Second, roundIs(1)); got.Status != "input_required" {
			t.Fatalf("the round ended before the admin confirmed: %s", got.Status)
		}
		reason := url.Values{"confirm": {"yes"}, "reason": {"Left over from the " + action + " drill"}}
		if status, _ := c.post(path, reason); status != http.StatusSeeOther {
			t.Fatalf("admin %s: %d", action, status)
		}
		if status, _ := c.post(path, reason); status != http.StatusConflict {
			t.Errorf("admin %s twice: %d, want 409", action, status)
		}
	}
	for id, want := range map[string]string{toExpire.ID: "expired", toCancel.ID: "cancelled"} {
		if got := person.waitFor(inst.URL, id, time.Second, isDone); got.Status != want {
			t.Errorf("API: %s, want %s", got.Status, want)
		}
		_, page := person.do("GET", inst.URL+"/calls/"+id, "", "")
		if !bytes.Contains(page, []byte(`data-status="`+want+`"`)) || !bytes.Contains(page, []byte("An administrator")) ||
			!bytes.Contains(page, []byte("drill")) {
			t.Errorf("dora's page does not say an administrator ended it (%s):\n%s", want, page)
		}
	}

	// Servers and users.
	spare := demoServer(t, nil)
	steps := []struct {
		path string
		form url.Values
	}{
		{"/admin/servers", url.Values{"name": {"spare"}, "url": {spare}}},
		{"/admin/servers/spare", url.Values{"url": {spare}, "round_ttl": {"2h"}, "header_name": {"Authorization"}, "header_value": {"Bearer spare-secret-1234"}}},
		{"/admin/servers/spare/enabled", url.Values{"enabled": {"false"}}},
		{"/admin/servers/spare/enabled", url.Values{"enabled": {"true"}}},
		{"/admin/servers/spare/refresh", url.Values{}},
		{"/admin/servers/spare/delete", url.Values{}},
		{"/admin/users", url.Values{"name": {"erin"}, "password": {"erin's long password"}}},
		{"/admin/users/erin/disabled", url.Values{"disabled": {"true"}}},
		{"/admin/users/erin/disabled", url.Values{"disabled": {"false"}}},
		{"/admin/users/erin/admin", url.Values{"admin": {"true"}}},
		{"/admin/users/erin/admin", url.Values{"admin": {"false"}}},
		{"/admin/users/erin/password", url.Values{"password": {"a new long password"}}},
	}
	for _, s := range steps {
		if status, body := c.post(inst.URL+s.path, s.form); status != http.StatusSeeOther {
			t.Fatalf("POST %s: %d\n%s", s.path, status, body)
		}
	}
	if status, _ := c.post(inst.URL+"/admin/servers/demo/check", url.Values{}); status != http.StatusOK {
		t.Errorf("check: %d", status)
	}
	if status, _ := c.post(inst.URL+"/logout", url.Values{}); status != http.StatusSeeOther {
		t.Errorf("sign out: %d", status)
	}

	want := []struct{ actor, action, target string }{
		{"admin", "sign_in.failed", "admin"},
		{"admin", "sign_in", "admin"},
		{"dora", "sign_in", "dora"},
		{"admin", "token.created", "ci"},
		{"admin", "token.revoked", revoke[1]},
		{"dora", "call.started", pageCall},
		{"dora", "round.answered", pageCall},
		{"dora", "call.started", declined.ID},
		{"dora", "round.declined", declined.ID},
		{"dora", "round.cancelled", cancelled.ID},
		{"dora", "round.answered", failing.ID},
		{"dora", "call.retried", failing.ID},
		{"admin", "admin.call.viewed", failing.ID},
		{"admin", "admin.call.retried", failing.ID},
		{"admin", "admin.round.expired", toExpire.ID},
		{"admin", "admin.round.cancelled", toCancel.ID},
		{"admin", "server.added", "spare"},
		{"admin", "server.updated", "spare"},
		{"admin", "server.credentials_set", "spare"},
		{"admin", "server.disabled", "spare"},
		{"admin", "server.enabled", "spare"},
		{"admin", "server.tools_refreshed", "spare"},
		{"admin", "server.removed", "spare"},
		{"admin", "server.checked", "demo"},
		{"admin", "user.added", "erin"},
		{"admin", "user.disabled", "erin"},
		{"admin", "user.enabled", "erin"},
		{"admin", "user.admin_granted", "erin"},
		{"admin", "user.admin_revoked", "erin"},
		{"admin", "user.password_reset", "erin"},
		{"admin", "sign_out", ""},
	}
	pool := adminPool(t, db)
	ctx := context.Background()
	for _, w := range want {
		var n int
		var instance, addr string
		err := pool.QueryRow(ctx, `select count(*), coalesce(min(instance), ''), coalesce(min(addr), '') from audit_log
			where actor = $1 and action = $2 and target = $3 and at > now() - interval '5 minutes'`,
			w.actor, w.action, w.target).Scan(&n, &instance, &addr)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || instance != inst.engine.Config().InstanceID || addr != "127.0.0.1" {
			t.Errorf("%s %s %s: %d rows from %q at %q; want one, from this instance and 127.0.0.1", w.actor, w.action, w.target, n, instance, addr)
		}
	}

	// The operator's reason is in the audit log.
	var reason string
	if err := pool.QueryRow(ctx, `select coalesce(detail->>'reason', '') from audit_log where action = 'admin.round.cancelled' and target = $1`,
		toCancel.ID).Scan(&reason); err != nil || reason != "Left over from the cancel drill" {
		t.Errorf("the audit log's reason for the cancel: %q, %v", reason, err)
	}

	// The audit page filters by action prefix.
	admin := newClient(t, db)
	admin.login(inst.URL, "admin", adminPassword)
	_, page = admin.do("GET", inst.URL+"/admin/audit?action=user.&actor=admin", "", "")
	if n := bytes.Count(page, []byte(`data-testid="audit-row"`)); n != 6 {
		t.Errorf("the audit page lists %d user actions, want 6", n)
	}

	// The calls of everyone, filtered.
	_, page = admin.do("GET", inst.URL+"/admin/calls?user=dora&status=cancelled&age=1h", "", "")
	if n := bytes.Count(page, []byte(`data-testid="call-row"`)); n != 1 || !bytes.Contains(page, []byte(toCancel.ID)) {
		t.Errorf("dora's cancelled calls: %d rows, want the one the admin cancelled", n)
	}
	_, page = admin.do("GET", inst.URL+"/admin/calls?server=demo&age=older1d", "", "")
	if bytes.Contains(page, []byte(`data-testid="call-row"`)) {
		t.Error("calls started more than a day ago: found some")
	}

	// No answer content and no credentials in any audit row or log line.
	var dump string
	if err := pool.QueryRow(ctx, `select coalesce(string_agg(audit_log::text, E'\n'), '') from audit_log`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"Zebediah", "Quux-Secret", "spare-secret-1234"} {
		if strings.Contains(dump, secret) {
			t.Errorf("the audit log holds %q", secret)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the logs hold %q", secret)
		}
	}
	// Log lines of requests carry a request id; those of a call, its id.
	if !regexp.MustCompile(`"msg":"request"[^\n]*"request_id":"[0-9a-f]{24}"[^\n]*"call_id":"` + pageCall + `"`).MatchString(logs.String()) {
		t.Error("no request log line with a request id and the call id")
	}

	for _, sql := range []string{`update audit_log set actor = 'x'`, `delete from audit_log`} {
		if _, err := pool.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want refused", sql, err)
		}
	}
}

// TestServerAddedAcrossInstances adds a server with credentials on A; B
// calls it at once, without a restart, and shows its credentials masked.
func TestServerAddedAcrossInstances(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)
	c.login(a.URL, "admin", adminPassword)

	const secret = "Bearer top-secret-key-9876"
	locked := demoServer(t, func(next http.Handler) http.Handler {
		return requireBearer("top-secret-key-9876", next)
	})
	// B lists the servers before A adds one, so anything cached would show.
	if status, _ := c.do("GET", b.URL+"/", "", ""); status != http.StatusOK {
		t.Fatalf("home on B: %d", status)
	}
	status, body := c.post(a.URL+"/admin/servers", url.Values{
		"name": {"locked"}, "url": {locked}, "header_name": {"Authorization"}, "header_value": {secret},
	})
	if status != http.StatusSeeOther {
		t.Fatalf("add on A: %d %s", status, body)
	}

	if status, home := c.do("GET", b.URL+"/", "", ""); status != http.StatusOK || !bytes.Contains(home, []byte(`data-testid="tool-approve"`)) ||
		!bytes.Contains(home, []byte("locked")) {
		t.Errorf("B's home page does not offer the new server's tools (%d)", status)
	}
	status, raw := c.do("POST", b.URL+"/api/v1/calls", "application/json", `{"server":"locked","tool":"approve","arguments":{}}`)
	if status != http.StatusCreated {
		t.Fatalf("call the new server on B: %d %s", status, raw)
	}
	id := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(string(raw))[1]
	c.waitFor(b.URL, id, 10*time.Second, roundIs(1))
	if status, body := c.answer(b.URL, id, 1, `{"approval":{"action":"accept","content":{}}}`); status != http.StatusAccepted {
		t.Fatalf("answer on B: %d %s", status, body)
	}
	if done := c.waitFor(a.URL, id, 10*time.Second, isDone); done.Status != "complete" {
		t.Errorf("status %s, error %+v", done.Status, done.Error)
	}

	_, page := c.do("GET", b.URL+"/admin/servers/locked", "", "")
	if bytes.Contains(page, []byte("top-secret")) || !bytes.Contains(page, []byte("Authorization: …9876")) {
		t.Errorf("B's server page does not mask the credentials:\n%s", page)
	}
	status, page = c.post(b.URL+"/admin/servers/locked/check", url.Values{})
	if status != http.StatusOK || !bytes.Contains(page, []byte(`data-testid="discovery-protocol">2026-07-28<`)) {
		t.Errorf("check on B: %d\n%s", status, page)
	}
}
