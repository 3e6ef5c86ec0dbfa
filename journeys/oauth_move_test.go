package journeys

import (
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/mcptest"
)

// TestOAuthServerMovesToCIMD: a server moves to another authorization
// server, one that takes Client ID Metadata Documents. The old connection
// stops working; the call waits for a sign-in, which goes to the new
// authorization server with Rounds' document URL (served at PUBLIC_URL) as
// client_id, and nothing of the old server's reaches the new one. The next
// refresh goes to the new authorization server too.
func TestOAuthServerMovesToCIMD(t *testing.T) {
	t.Parallel()
	old := mcptest.NewAuthServer(t)
	moved := mcptest.NewAuthServer(t)
	moved.Set(func(as *mcptest.AuthServer) { as.CIMD = true })
	mcpURL, move := mcptest.ProtectMovable(t, old, demo.Handler(demo.Options{Secret: []byte("test secret, shared by every instance")}), "mcp:tools")
	addr := freeLoopback(t)
	public := "http://" + addr
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "secure=" + mcpURL, "PUBLIC_URL": public, "LISTEN_ADDR": addr}, nil)
	base := inst.URL
	c := newClient(t, db)
	c.login(base, "admin", adminPassword)

	// The document: Rounds' client id is its own URL, with the callback.
	status, body := c.do("GET", base+"/oauth/client-metadata.json", "", "")
	var doc struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		GrantTypes   []string `json:"grant_types"`
	}
	if err := json.Unmarshal(body, &doc); status != http.StatusOK || err != nil || doc.ClientID != public+"/oauth/client-metadata.json" ||
		len(doc.RedirectURIs) != 1 || doc.RedirectURIs[0] != public+"/oauth/callback" || doc.AuthMethod != "none" ||
		!slicesHas(doc.GrantTypes, "authorization_code", "refresh_token") {
		t.Fatalf("client metadata document: %d %s", status, body)
	}

	// Connected at the old authorization server (dynamic registration).
	authz := c.follow(base+"/servers/secure/connect", http.StatusSeeOther)
	if !strings.HasPrefix(authz.String(), old.URL+"/authorize?") || strings.HasPrefix(authz.Query().Get("client_id"), "http") {
		t.Fatalf("first authorization request: %s", authz)
	}
	c.follow(c.follow(authz.String(), http.StatusFound).String(), http.StatusSeeOther)
	first := c.start(base, `{"server":"secure","tool":"book_flight"}`)
	c.waitFor(base, first.ID, 10*time.Second, roundIs(1))

	// The server moves. Its next call waits for a sign-in at the new one.
	move(moved)
	call := c.start(base, `{"server":"secure","tool":"book_flight"}`)
	c.waitFor(base, call.ID, 10*time.Second, func(x apiCall) bool { return x.Status == "authorization_required" })
	// The connection it turned down is not said to be connected: the
	// server's status says where to sign in again.
	status, body = c.do("GET", base+"/api/v1/servers/secure", "", "")
	var srv struct {
		Authorization struct{ Status, URL string } `json:"authorization"`
	}
	if err := json.Unmarshal(body, &srv); status != http.StatusOK || err != nil ||
		srv.Authorization.Status != "required" || !strings.HasSuffix(srv.Authorization.URL, "/servers/secure/connect") {
		t.Fatalf("the server after its connection was turned down: %d %s", status, body)
	}
	authz = c.follow(base+"/servers/secure/connect?call="+call.ID, http.StatusSeeOther)
	if !strings.HasPrefix(authz.String(), moved.URL+"/authorize?") || authz.Query().Get("client_id") != doc.ClientID {
		t.Fatalf("authorization request after the move: %s, want %s with the document's URL as client_id", authz, moved.URL)
	}
	moved.Set(func(as *mcptest.AuthServer) { as.TokenTTL = time.Second })
	c.follow(c.follow(authz.String(), http.StatusFound).String(), http.StatusSeeOther)
	c.waitFor(base, call.ID, 10*time.Second, roundIs(1))
	if moved.Documents[doc.ClientID] == nil {
		t.Fatalf("the new authorization server never read Rounds' document")
	}

	// The new token runs out (a second-long token is renewed whenever it is
	// used): it is renewed at the new server, never at the old one.
	oldRefreshes, _ := old.Counts()
	moved.Elapse(1100 * time.Millisecond) // the token's lifetime
	next := c.start(base, `{"server":"secure","tool":"book_flight"}`)
	c.waitFor(base, next.ID, 10*time.Second, roundIs(1))
	refreshes, foreign := moved.Counts()
	if refreshes < 1 || foreign != 0 {
		t.Fatalf("new authorization server: %d refreshes and %d foreign codes or tokens, want some and 0", refreshes, foreign)
	}
	if n, _ := old.Counts(); n != oldRefreshes {
		t.Fatalf("the old authorization server was asked to refresh after the move")
	}
}

// TestOAuthHeldStepUp: on a held 2025-11-25 session, the server refuses
// the call with 403 insufficient_scope. The call waits for the person to
// grant more, then opens a session again and goes on: its questions come
// and the call finishes.
func TestOAuthHeldStepUp(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t)
	oldSrv := newOldServer(t)
	target, _ := url.Parse(oldSrv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // server-sent events pass at once
	guarded := mcptest.Protect(t, as, proxy, "mcp:tools", "ask_twice")
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "old[2025-11-25]=" + guarded}, nil)
	base := inst.URL
	c := newClient(t, db)
	c.login(base, "admin", adminPassword)
	authz := c.follow(base+"/servers/old/connect", http.StatusSeeOther)
	c.follow(c.follow(authz.String(), http.StatusFound).String(), http.StatusSeeOther)

	call := c.start(base, `{"server":"old","tool":"ask_twice"}`)
	c.waitFor(base, call.ID, 30*time.Second, func(x apiCall) bool { return x.Status == "authorization_required" })
	if got := c.callAuth(base, call.ID); got.Error == nil || !strings.Contains(got.Error.Message, "more permissions (mcp:admin)") {
		t.Fatalf("held call refused for a scope: %+v", got.Error)
	}
	authz = c.follow(base+"/servers/old/connect?call="+call.ID, http.StatusSeeOther)
	if scopes := strings.Fields(authz.Query().Get("scope")); !slicesHas(scopes, "mcp:tools", "mcp:admin") {
		t.Fatalf("step-up scope %q", authz.Query().Get("scope"))
	}
	c.follow(c.follow(authz.String(), http.StatusFound).String(), http.StatusSeeOther)
	c.waitFor(base, call.ID, 30*time.Second, roundIs(1))
	c.mustAnswer(base, call.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Ada"}}}`)
	c.waitFor(base, call.ID, 30*time.Second, roundIs(2))
	c.mustAnswer(base, call.ID, 2, `{"elicitation":{"action":"accept","content":{"colour":"teal"}}}`)
	if done := c.waitFor(base, call.ID, 30*time.Second, isDone); done.Status != "complete" || resultText(t, done.Result) != "Ada likes teal" {
		t.Fatalf("call = %+v", done)
	}
}
