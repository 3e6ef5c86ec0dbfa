package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/app"
)

// addUser adds a user through the command line, as an operator would.
func addUser(t *testing.T, db, name, password string) {
	t.Helper()
	var out bytes.Buffer
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db
		}
		return ""
	}
	if err := app.Command(context.Background(), []string{"user", "add", name}, strings.NewReader(password+"\n"), &out, getenv); err != nil {
		t.Fatalf("web user add %s: %v", name, err)
	}
}

// TestOwnership: a second person can neither read nor answer the first
// person's call, through the pages or the API. Both see 404, the same as
// for a call that does not exist.
func TestOwnership(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	owner := newClient(t, db)
	call := owner.startCall(inst.URL, "confirm_delete", `{"path":"/a"}`)
	owner.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))

	addUser(t, db, "mallory", "mallory's password")
	other := newClient(t, db)
	other.token = newToken(t, db, "mallory")
	other.login(inst.URL, "mallory", "mallory's password")

	for _, tc := range []struct {
		name   string
		status func() int
	}{
		{"APIShow", func() int { s, _ := other.do("GET", inst.URL+"/api/v1/calls/"+call.ID, "", ""); return s }},
		{"APIAnswer", func() int {
			s, _ := other.answer(inst.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`)
			return s
		}},
		{"APIRetry", func() int { s, _ := other.do("POST", inst.URL+"/api/v1/calls/"+call.ID+"/retry", "", ""); return s }},
		{"Page", func() int { s, _ := other.do("GET", inst.URL+"/calls/"+call.ID, "", ""); return s }},
		{"Live", func() int { s, _ := other.do("GET", inst.URL+"/calls/"+call.ID+"/live", "", ""); return s }},
		{"Answer", func() int {
			s, _ := other.post(inst.URL+"/calls/"+call.ID+"/rounds/1", url.Values{"q0$action": {"accept"}, "q0.confirm": {"true"}})
			return s
		}},
		{"Draft", func() int {
			s, _ := other.post(inst.URL+"/calls/"+call.ID+"/rounds/1/draft", url.Values{"q0$action": {"decline"}})
			return s
		}},
		{"Retry", func() int { s, _ := other.post(inst.URL+"/calls/"+call.ID+"/retry", url.Values{}); return s }},
		{"Missing", func() int {
			s, _ := other.do("GET", inst.URL+"/api/v1/calls/00000000-0000-0000-0000-000000000000", "", "")
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.status(); got != http.StatusNotFound {
				t.Errorf("status = %d, want 404", got)
			}
		})
	}
	_, inbox := other.do("GET", inst.URL+"/inbox", "", "")
	if bytes.Contains(inbox, []byte("confirm_delete")) {
		t.Error("another person's round is in mallory's inbox")
	}
	// The round is still waiting for its owner.
	if got := owner.waitFor(inst.URL, call.ID, time.Second, roundIs(1)); got.Status != "input_required" {
		t.Errorf("status = %s", got.Status)
	}
}

func TestSignInRequired(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	anon := &client{t: t}
	for _, path := range []string{"/", "/inbox", "/tokens", "/servers/demo/tools/book_flight", "/calls/x"} {
		status, _ := anon.do("GET", inst.URL+path, "", "")
		if status != http.StatusSeeOther {
			t.Errorf("GET %s: %d, want a redirect to /login", path, status)
		}
	}
	for _, path := range []string{"/login", "/healthz", "/readyz", "/static/app.css"} {
		if status, _ := anon.do("GET", inst.URL+path, "", ""); status != http.StatusOK {
			t.Errorf("GET %s: %d, want 200 without signing in", path, status)
		}
	}
	status, body := anon.do("GET", inst.URL+"/api/v1/calls/x", "", "")
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	if status != http.StatusUnauthorized || json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		t.Errorf("API without a token: %d %s, want 401 with a JSON error", status, body)
	}
	anon.token = "rnd_not-a-real-token"
	if status, _ := anon.do("GET", inst.URL+"/api/v1/calls/x", "", ""); status != http.StatusUnauthorized {
		t.Errorf("API with a bad token: %d, want 401", status)
	}
}

func TestRevokedToken(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	if status, _ := c.post(inst.URL+"/tokens", url.Values{"name": {"ci"}}); status != http.StatusSeeOther {
		t.Fatalf("create token: %d", status)
	}
	_, page := c.do("GET", inst.URL+"/tokens", "", "")
	// The page lists the token without its secret.
	if bytes.Contains(page, []byte(c.token)) {
		t.Fatal("the tokens page shows a token's secret again")
	}
	if status, _ := c.do("GET", inst.URL+"/api/v1/calls/00000000-0000-0000-0000-000000000000", "", ""); status != http.StatusNotFound {
		t.Fatalf("a valid token: %d, want 404 for a missing call", status)
	}
	// Revoke the command-line token (the oldest, listed last).
	i := bytes.LastIndex(page, []byte(`/revoke"`))
	j := bytes.LastIndex(page[:i], []byte(`action="`))
	revoke := string(page[j+len(`action="`) : i+len(`/revoke`)])
	if status, _ := c.post(inst.URL+revoke, url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("revoke %s: %d", revoke, status)
	}
	if status, _ := c.do("GET", inst.URL+"/api/v1/calls/00000000-0000-0000-0000-000000000000", "", ""); status != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d, want 401", status)
	}
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	tool := inst.URL + "/servers/demo/tools/current_time"

	status, _ := c.do("POST", tool, "application/x-www-form-urlencoded", "")
	if status != http.StatusForbidden {
		t.Errorf("without a token: %d, want 403", status)
	}
	status, _ = c.do("POST", tool, "application/x-www-form-urlencoded", url.Values{"csrf_token": {"forged"}}.Encode())
	if status != http.StatusForbidden {
		t.Errorf("with a wrong token: %d, want 403", status)
	}
	status, _ = c.post(tool, url.Values{})
	if status != http.StatusSeeOther {
		t.Errorf("with the token: %d, want 303", status)
	}
	// The login form is protected too.
	anon := &client{t: t}
	status, _ = anon.do("POST", inst.URL+"/login", "application/x-www-form-urlencoded", url.Values{"username": {"admin"}, "password": {adminPassword}}.Encode())
	if status != http.StatusForbidden {
		t.Errorf("login without a token: %d, want 403", status)
	}
}

func TestSessionCookie(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	servers := "demo=" + demoServer(t, nil)
	const oldKey, newKey = "an old session key of at least 32 characters", "a new session key of at least 32 characters too"
	before := startInstance(t, db, map[string]string{"MCP_SERVERS": servers, "SESSION_KEYS": oldKey,
		"PUBLIC_URL": "https://rounds.test"}, nil)
	c := newClient(t, db)
	c.login(before.URL, "admin", adminPassword)

	u, _ := url.Parse(before.URL)
	var session *http.Cookie
	for _, ck := range c.bodies {
		if strings.Contains(ck, "Set-Cookie: rounds_session=") {
			line := ck[strings.Index(ck, "Set-Cookie: rounds_session="):]
			line = line[:strings.IndexByte(line, '\n')]
			for _, want := range []string{"HttpOnly", "SameSite=Lax", "Secure", "Max-Age="} {
				if !strings.Contains(line, want) {
					t.Errorf("session cookie lacks %s: %s", want, line)
				}
			}
		}
	}
	for _, ck := range c.jar.Cookies(u) {
		if ck.Name == "rounds_session" {
			session = ck
		}
	}
	if session == nil {
		t.Fatal("no session cookie")
	}

	// An instance that signs with a new key still takes the old cookie.
	rotated := startInstance(t, db, map[string]string{"MCP_SERVERS": servers, "SESSION_KEYS": newKey + "," + oldKey}, nil)
	req, _ := http.NewRequest("GET", rotated.URL+"/inbox", nil)
	req.AddCookie(session)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after rotation: %d, want 200", resp.StatusCode)
	}
	// One that no longer knows the old key sends the person to sign in.
	forgot := startInstance(t, db, map[string]string{"MCP_SERVERS": servers, "SESSION_KEYS": newKey}, nil)
	req, _ = http.NewRequest("GET", forgot.URL+"/inbox", nil)
	req.AddCookie(session)
	resp, err = (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("with the old key dropped: %d, want 303 to /login", resp.StatusCode)
	}
}

// TestLoginRateLimit: failed sign-ins count across instances, per account.
func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	instances := []*instance{startInstance(t, db, env, nil), startInstance(t, db, env, nil)}
	try := func(inst *instance, password string) int {
		jar, _ := cookiejar.New(nil)
		c := &client{t: t, jar: jar}
		_, page := c.do("GET", inst.URL+"/login", "", "")
		status, _ := c.do("POST", inst.URL+"/login", "application/x-www-form-urlencoded",
			url.Values{"username": {"admin"}, "password": {password}, "csrf_token": {csrfFrom(page)}}.Encode())
		return status
	}
	for i := range 5 {
		if status := try(instances[i%2], "wrong password"); status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, status)
		}
	}
	for i, inst := range instances {
		if status := try(inst, adminPassword); status != http.StatusTooManyRequests {
			t.Errorf("instance %d after 5 failures: %d, want 429 even with the right password", i, status)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	resp, err := http.Get(inst.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows inline script or eval: %q", csp)
	}
	for name, want := range map[string]string{
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if resp.Header.Get("Permissions-Policy") == "" {
		t.Error("no Permissions-Policy")
	}
	// Bodies are capped.
	big := strings.Repeat("x", 3<<20)
	c := newClient(t, db)
	if status, _ := c.do("POST", inst.URL+"/api/v1/calls", "application/json", big); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 3 MiB body: %d, want 413", status)
	}
}

// stateServer is a 2026-07-28 MCP server that asks one question with a
// requestState of the given size, and answers the retry with whether the
// state came back intact.
func stateServer(t *testing.T, size int) string {
	t.Helper()
	state := strings.Repeat("s", size)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestState *string `json:"requestState"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		mu.Lock()
		defer mu.Unlock()
		var result string
		switch {
		case msg.Method == "server/discover":
			result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}`
		case msg.Method == "tools/list":
			result = `{"tools":[{"name":"big","inputSchema":{"type":"object"}}]}`
		case msg.Params.RequestState == nil:
			result = `{"resultType":"input_required","inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"OK?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"` + state + `"}`
		default:
			result = fmt.Sprintf(`{"content":[{"type":"text","text":"state intact: %t"}]}`, *msg.Params.RequestState == state)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRequestStateSize: a 1 MiB requestState is kept exactly through
// Postgres; a 20 MiB one fails the call with a clear message.
func TestRequestStateSize(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	// Reading 20 MiB is slow under the race detector on a busy machine.
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + stateServer(t, 1<<20) + ",huge=" + stateServer(t, 20<<20),
		"MCP_REQUEST_TIMEOUT": "90s"}, nil)
	c := newClient(t, db)

	call := c.startCall(inst.URL, "big", `{}`)
	c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
	if status, body := c.answer(inst.URL, call.ID, 1, `{"ok":{"action":"accept","content":{}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if got := resultText(t, done.Result); got != "state intact: true" {
		t.Errorf("1 MiB state: %q", got)
	}

	status, body := c.do("POST", inst.URL+"/api/v1/calls", "application/json", `{"server":"huge","tool":"big","arguments":{}}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var huge apiCall
	_ = json.Unmarshal(body, &huge)
	done = c.waitFor(inst.URL, huge.ID, 2*time.Minute, isDone)
	if done.Status != "failed" || done.Error == nil || !strings.Contains(done.Error.Message, "requestState") {
		t.Errorf("20 MiB state: %+v", done)
	}
}
