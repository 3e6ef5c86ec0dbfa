package journeys

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/mcptest"
)

func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// follow makes one request without following redirects and returns where
// it points.
func (c *client) follow(rawURL string, want int) *url.URL {
	c.t.Helper()
	status, body := c.do("GET", rawURL, "", "")
	if status != want {
		c.t.Fatalf("GET %s: %d %s, want %d", rawURL, status, body, want)
	}
	c.mu.Lock()
	last := c.bodies[len(c.bodies)-1]
	c.mu.Unlock()
	for line := range strings.SplitSeq(last, "\n") {
		if loc, ok := strings.CutPrefix(line, "Location: "); ok {
			u, err := url.Parse(strings.TrimSpace(loc))
			if err != nil {
				c.t.Fatal(err)
			}
			if !u.IsAbs() {
				base, _ := url.Parse(rawURL)
				u = base.ResolveReference(u)
			}
			return u
		}
	}
	c.t.Fatalf("GET %s: no Location", rawURL)
	return nil
}

type apiCallAuth struct {
	apiCall
	Authorization *struct {
		Status string `json:"status"`
		URL    string `json:"url"`
	} `json:"authorization"`
}

func (c *client) callAuth(base, id string) apiCallAuth {
	c.t.Helper()
	_, body := c.do("GET", base+"/api/v1/calls/"+id, "", "")
	var out apiCallAuth
	if err := json.Unmarshal(body, &out); err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *client) serverAuth(base, name string) string {
	c.t.Helper()
	_, body := c.do("GET", base+"/api/v1/servers/"+name, "", "")
	var s struct {
		Authorization struct {
			Status string `json:"status"`
		} `json:"authorization"`
	}
	_ = json.Unmarshal(body, &s)
	return s.Authorization.Status
}

// TestOAuthAcrossInstances runs MCP authorization against an authorization
// server of the test's own: a call to a protected server waits for its
// owner to connect; the person starts on one instance, the authorization
// server sends them back to the other, and the call goes on by itself.
// Then the token runs out and is refreshed once however many calls need
// it at the same time, and the bad cases get their clear errors.
func TestOAuthAcrossInstances(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t)
	mcpURL := mcptest.Protect(t, as, demo.Handler(demo.Options{Secret: []byte("test secret, shared by every instance")}), "mcp:tools")
	db := newDatabase(t)
	addrA := freeLoopback(t)
	env := map[string]string{"MCP_SERVERS": "secure=" + mcpURL, "PUBLIC_URL": "http://" + addrA}
	envA := map[string]string{"LISTEN_ADDR": addrA}
	for k, v := range env {
		envA[k] = v
	}
	a := startInstance(t, db, envA, nil)
	b := startInstance(t, db, env, nil)
	api := fetchOpenAPI(t, b.URL)
	c := newClient(t, db)
	c.login(a.URL, "admin", adminPassword)

	// Started through the API on instance B.
	call := c.start(b.URL, `{"server":"secure","tool":"book_flight"}`)
	c.waitFor(b.URL, call.ID, 10*time.Second, func(x apiCall) bool { return x.Status == "authorization_required" })
	status, body := c.do("GET", b.URL+"/api/v1/calls/"+call.ID, "", "")
	api.check("GET", "/calls/{id}", status, body)
	waiting := c.callAuth(b.URL, call.ID)
	wantURL := "http://" + addrA + "/servers/secure/connect?call=" + call.ID
	if waiting.Authorization == nil || waiting.Authorization.Status != "required" || waiting.Authorization.URL != wantURL {
		t.Fatalf("waiting call's authorization = %+v, want required at %s", waiting.Authorization, wantURL)
	}
	if got := c.serverAuth(b.URL, "secure"); got != "required" {
		t.Fatalf("server authorization %q, want required", got)
	}
	// The call page offers the button.
	if _, page := c.do("GET", b.URL+"/calls/"+call.ID, "", ""); !strings.Contains(string(page), `data-testid="connect"`) ||
		!strings.Contains(string(page), "Connect to secure") {
		t.Fatalf("call page has no Connect button:\n%s", page)
	}

	// The person opens the link (on A), signs in at the authorization
	// server, and comes back.
	authz := c.follow(waiting.Authorization.URL, http.StatusSeeOther)
	q := authz.Query()
	if !strings.HasPrefix(authz.String(), as.URL+"/authorize?") || q.Get("code_challenge_method") != "S256" ||
		q.Get("code_challenge") == "" || q.Get("resource") != mcpURL || q.Get("state") == "" ||
		q.Get("redirect_uri") != "http://"+addrA+"/oauth/callback" {
		t.Fatalf("authorization request: %s", authz)
	}
	if scopes := strings.Fields(q.Get("scope")); len(scopes) != 2 || scopes[0] != "mcp:tools" || scopes[1] != "offline_access" {
		t.Fatalf("scope = %q, want the challenged scope and offline_access", q.Get("scope"))
	}
	callback := c.follow(authz.String(), http.StatusFound)
	// Back on the other instance than the one that will serve the call page.
	back := c.follow(callback.String(), http.StatusSeeOther)
	if back.Path != "/calls/"+call.ID {
		t.Fatalf("after the callback: %s, want the call", back)
	}
	c.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))
	if got := c.serverAuth(a.URL, "secure"); got != "connected" {
		t.Fatalf("server authorization after connecting %q, want connected", got)
	}
	// The same answer twice is refused, and a state nobody started too.
	status, body = c.do("GET", callback.String(), "", "")
	if status != http.StatusBadRequest || !strings.Contains(string(body), "already used") {
		t.Fatalf("callback used twice: %d %s", status, body)
	}
	status, body = c.do("GET", a.URL+"/oauth/callback?code=x&state=forged", "", "")
	if status != http.StatusBadRequest || !strings.Contains(string(body), "does not match") {
		t.Fatalf("forged state: %d %s", status, body)
	}
	// Tokens never show: not in a page, not in the API.
	for _, raw := range []string{"at-", "rt-"} {
		_, page := c.do("GET", a.URL+"/servers/secure", "", "")
		_, apiBody := c.do("GET", a.URL+"/api/v1/servers/secure", "", "")
		if strings.Contains(string(page), raw) || strings.Contains(string(apiBody), raw) {
			t.Fatalf("a token shows")
		}
	}
	// The tool list is read with the person's connection.
	status, body = c.do("GET", b.URL+"/api/v1/servers/secure/tools", "", "")
	if status != http.StatusOK || !strings.Contains(string(body), `"book_flight"`) {
		t.Fatalf("tools with a connection: %d %s", status, body)
	}
	c.mustAnswer(a.URL, call.ID, 1, tripAnswers)
	c.waitFor(a.URL, call.ID, 10*time.Second, roundIs(2))
	c.mustAnswer(b.URL, call.ID, 2, seatAnswers)
	if done := c.waitFor(a.URL, call.ID, 10*time.Second, isDone); done.Status != "complete" {
		t.Fatalf("call ended %s: %+v", done.Status, done.Error)
	}

	// The access token runs out; two calls at once on two instances need
	// it: it is refreshed once.
	as.Set(func(as *mcptest.AuthServer) { as.TokenTTL = time.Second })
	c.disconnectAndConnect(a.URL, "secure")
	as.Set(func(as *mcptest.AuthServer) { as.TokenTTL = time.Hour }) // the renewed one lasts
	as.Elapse(1100 * time.Millisecond)                               // the token's lifetime, as a person would take to come back
	var wg sync.WaitGroup
	ids := make([]string, 2)
	for i, inst := range []*instance{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = c.start(inst.URL, `{"server":"secure","tool":"book_flight"}`).ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		c.waitFor(a.URL, id, 10*time.Second, roundIs(1))
	}
	if n := as.RefreshCount(); n != 1 {
		t.Fatalf("refreshes = %d, want exactly 1", n)
	}

	// An authorization server answering for someone else is refused.
	as.Set(func(as *mcptest.AuthServer) { as.WrongIss = true })
	authz = c.follow(a.URL+"/servers/secure/connect", http.StatusSeeOther)
	callback = c.follow(authz.String(), http.StatusFound)
	status, body = c.do("GET", callback.String(), "", "")
	if status != http.StatusBadRequest || !strings.Contains(string(body), "wrong authorization server") {
		t.Fatalf("wrong iss: %d %s", status, body)
	}
	as.Set(func(as *mcptest.AuthServer) { as.WrongIss = false })

	// Disconnecting: the next call waits for a sign-in again.
	c.disconnect(a.URL, "secure")
	if got := c.serverAuth(b.URL, "secure"); got != "required" {
		t.Fatalf("after disconnecting: %q, want required", got)
	}
	// The authorization server is down: a clear error, nothing stored.
	as.Close()
	status, body = c.do("GET", a.URL+"/servers/secure/connect", "", "")
	if status != http.StatusBadGateway || !strings.Contains(string(body), "authorization server") {
		t.Fatalf("authorization server down: %d %s", status, body)
	}
}

func (c *client) disconnect(base, server string) {
	c.t.Helper()
	if status, body := c.post(base+"/servers/"+server+"/disconnect", url.Values{}); status != http.StatusSeeOther {
		c.t.Fatalf("disconnect: %d %s", status, body)
	}
}

// disconnectAndConnect signs in to a server afresh.
func (c *client) disconnectAndConnect(base, server string) {
	c.t.Helper()
	c.disconnect(base, server)
	authz := c.follow(base+"/servers/"+server+"/connect", http.StatusSeeOther)
	callback := c.follow(authz.String(), http.StatusFound)
	c.follow(callback.String(), http.StatusSeeOther)
}

// TestOAuthSharedStepUpAndAdmin covers the rest of the people's side: a
// step-up when the server wants more scopes, the account page and the
// admin's list of connections with Revoke, and a server an admin connects
// once for everyone.
func TestOAuthSharedStepUpAndAdmin(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t)
	as.Set(func(as *mcptest.AuthServer) { as.OIDCOnly = true }) // the other discovery mechanism
	inner := demo.Handler(demo.Options{Secret: []byte("test secret, shared by every instance")})
	guarded := mcptest.Protect(t, as, inner, "mcp:tools", "book_flight")
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "guarded=" + guarded}, nil)
	base := inst.URL
	c := newClient(t, db)
	c.login(base, "admin", adminPassword)

	// Step-up: connected with mcp:tools, the tool wants mcp:admin as well.
	c.disconnectAndConnectFirst(base, "guarded")
	call := c.start(base, `{"server":"guarded","tool":"book_flight"}`)
	c.waitFor(base, call.ID, 10*time.Second, func(x apiCall) bool { return x.Status == "authorization_required" })
	if got := c.callAuth(base, call.ID); got.Error == nil || !strings.Contains(got.Error.Message, "more permissions") {
		t.Fatalf("step-up call: %+v", got.Error)
	}
	authz := c.follow(base+"/servers/guarded/connect?call="+call.ID, http.StatusSeeOther)
	if scopes := strings.Fields(authz.Query().Get("scope")); !slicesHas(scopes, "mcp:tools", "mcp:admin", "offline_access") {
		t.Fatalf("step-up scope %q, want what was granted and what is challenged", authz.Query().Get("scope"))
	}
	c.follow(c.follow(authz.String(), http.StatusFound).String(), http.StatusSeeOther)
	c.waitFor(base, call.ID, 10*time.Second, roundIs(1))

	// The account page lists the connection; the admin page too, with Revoke.
	if _, page := c.do("GET", base+"/account", "", ""); !strings.Contains(string(page), `data-testid="connection-row"`) ||
		!strings.Contains(string(page), as.URL) {
		t.Fatalf("account page does not list the connection:\n%s", page)
	}
	if _, page := c.do("GET", base+"/admin/connections", "", ""); !strings.Contains(string(page), ">admin<") {
		t.Fatalf("admin connections page:\n%s", page)
	}
	if status, body := c.post(base+"/admin/connections/revoke", url.Values{"server": {"guarded"}, "owner": {"admin"}}); status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", status, body)
	}
	if got := c.serverAuth(base, "guarded"); got != "required" {
		t.Fatalf("after revoking: %q, want required", got)
	}

	// Shared: an admin connects once for everyone; a person cannot.
	if status, body := c.post(base+"/admin/servers/guarded/oauth", url.Values{"mode": {"shared"}}); status != http.StatusSeeOther {
		t.Fatalf("oauth settings: %d %s", status, body)
	}
	addUser(t, db, "bea", "bea's long password")
	bea := &client{t: t, token: newToken(t, db, "bea")}
	bea.jar, _ = cookiejar.New(nil)
	bea.login(base, "bea", "bea's long password")
	waiting := bea.start(base, `{"server":"guarded","tool":"book_flight"}`)
	bea.waitFor(base, waiting.ID, 10*time.Second, func(x apiCall) bool { return x.Status == "authorization_required" })
	if status, _ := bea.do("GET", base+"/servers/guarded/connect", "", ""); status != http.StatusForbidden {
		t.Fatalf("a person connecting a shared server: %d, want 403", status)
	}
	authz = c.follow(base+"/servers/guarded/connect", http.StatusSeeOther)
	c.follow(c.follow(authz.String(), http.StatusFound).String(), http.StatusSeeOther)
	bea.waitFor(base, waiting.ID, 10*time.Second, roundIs(1))
	if got := bea.serverAuth(base, "guarded"); got != "connected" {
		t.Fatalf("bea on a shared connection: %q, want connected", got)
	}
}

func slicesHas(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// disconnectAndConnectFirst connects to a server that has not asked yet:
// the tool list on the home page meets the 401 first.
func (c *client) disconnectAndConnectFirst(base, server string) {
	c.t.Helper()
	c.do("GET", base+"/", "", "")
	authz := c.follow(base+"/servers/"+server+"/connect", http.StatusSeeOther)
	c.follow(c.follow(authz.String(), http.StatusFound).String(), http.StatusSeeOther)
}
