package journeys

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

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
		if n != 1 || instance != inst.InstanceID() || addr != "127.0.0.1" {
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
