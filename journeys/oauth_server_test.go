package journeys

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/oauth2"

	"github.com/mcp-rounds/rounds/app"
	"github.com/mcp-rounds/rounds/store"
)

// agentCallback is an agent's loopback redirect URI: it keeps what the
// authorization server sent back.
type agentCallback struct {
	*httptest.Server
	mu   sync.Mutex
	last url.Values
}

func newAgentCallback(t *testing.T) *agentCallback {
	cb := &agentCallback{}
	cb.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cb.mu.Lock()
		cb.last = r.URL.Query()
		cb.mu.Unlock()
		_, _ = io.WriteString(w, "You can close this window.")
	}))
	t.Cleanup(cb.Close)
	return cb
}

func (cb *agentCallback) redirectURI() string { return cb.URL + "/callback" }

func (cb *agentCallback) query() url.Values {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.last
}

// agentBrowser is the person's side of an OAuth sign-in, done by an HTTP client
// that keeps cookies and follows redirects as a browser does.
type agentBrowser struct {
	t    *testing.T
	base string
	http *http.Client
}

func newAgentBrowser(t *testing.T, base string) *agentBrowser {
	jar, _ := cookiejar.New(nil)
	return &agentBrowser{t: t, base: base, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (b *agentBrowser) get(u string) (*http.Response, *goquery.Document) {
	b.t.Helper()
	resp, err := b.http.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp, doc
}

func (b *agentBrowser) postForm(u string, form url.Values) (*http.Response, *goquery.Document) {
	b.t.Helper()
	resp, err := b.http.PostForm(u, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp, doc
}

// authorize opens authURL; signs in with the password when sent to sign
// in; answers the consent page with decision ("allow" or "deny"); and
// follows on to the agent. It returns the consent page it saw (nil when
// the server sent the browser straight back to the agent).
func (b *agentBrowser) authorize(authURL, name, password, decision string) *goquery.Document {
	b.t.Helper()
	resp, doc := b.get(authURL)
	if resp.Request.URL.Path == "/login" {
		form := url.Values{"username": {name}, "password": {password},
			"csrf_token": {doc.Find(`input[name=csrf_token]`).AttrOr("value", "")},
			"next":       {doc.Find(`input[name=next]`).AttrOr("value", "")}}
		resp, doc = b.postForm(b.base+"/login", form)
	}
	if resp.Request.URL.Path != "/oauth/consent" {
		return nil // sent back to the agent at once, with an error
	}
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("consent page: %d", resp.StatusCode)
	}
	form := url.Values{"decision": {decision}, "id": {doc.Find(`input[name=id]`).AttrOr("value", "")},
		"csrf_token": {doc.Find(`form[action="/oauth/consent"] input[name=csrf_token]`).AttrOr("value", "")}}
	answered, page := b.postForm(b.base+"/oauth/consent", form)
	if answered.StatusCode != http.StatusOK {
		b.t.Fatalf("answering the consent page: %d", answered.StatusCode)
	}
	next, ok := page.Find(`[data-testid=consent-continue]`).Attr("href")
	if !ok {
		b.t.Fatal("the answered consent page has no way on")
	}
	if r, _ := b.get(resolve(b.base, next)); r.StatusCode != http.StatusOK {
		b.t.Fatalf("back at the agent: %d", r.StatusCode)
	}
	return doc
}

func resolve(base, ref string) string {
	u, _ := url.Parse(base)
	r, _ := url.Parse(ref)
	return u.ResolveReference(r).String()
}

// oauthAgent is an agent signing in with golang.org/x/oauth2.
type oauthAgent struct {
	conf oauth2.Config
	cb   *agentCallback
}

func newOAuthAgent(base, clientID string, cb *agentCallback) *oauthAgent {
	return &oauthAgent{cb: cb, conf: oauth2.Config{ClientID: clientID, RedirectURL: cb.redirectURI(),
		Endpoint: oauth2.Endpoint{AuthURL: base + "/authorize", TokenURL: base + "/oauth/token",
			AuthStyle: oauth2.AuthStyleInParams}}}
}

// register registers a public client dynamically (RFC 7591).
func register(t *testing.T, base string, body map[string]any) (int, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(base+"/oauth/register", "application/json", strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func resourceOf(base, server string) oauth2.AuthCodeOption {
	return oauth2.SetAuthURLParam("resource", base+"/mcp/"+server)
}

// signIn runs the whole flow: authorize with PKCE S256 for the servers
// (a resource parameter each), consent as admin, exchange the code.
func (a *oauthAgent) signIn(t *testing.T, b *agentBrowser, base string, servers ...string) *oauth2.Token {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	u, _ := url.Parse(a.conf.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier)))
	q := u.Query()
	for _, s := range servers {
		q.Add("resource", base+"/mcp/"+s)
	}
	u.RawQuery = q.Encode()
	b.authorize(u.String(), "admin", adminPassword, "allow")
	q = a.cb.query()
	if q.Get("state") != "st-1" || q.Get("code") == "" {
		t.Fatalf("back at the agent with %v, want a code and its state", q)
	}
	tok, err := a.conf.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchanging the code: %v", err)
	}
	return tok
}

// TestOAuthAgentSignsIn is the authorization code flow of an agent that
// registered itself: a person not signed in signs in with a password,
// sees the consent page naming the agent and the server, allows; the agent
// gets a token for that server only, refreshes it (the old refresh token
// then refused), and loses everything when the person disconnects it.
func TestOAuthAgentSignsIn(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	demo := demoServer(t, nil)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demo + ",other=" + demo}, nil)
	ctx := context.Background()
	cb := newAgentCallback(t)

	status, reg := register(t, inst.URL, map[string]any{"client_name": "Test <b>Agent</b>",
		"redirect_uris": []string{cb.redirectURI()}})
	if status != http.StatusCreated || reg["client_id"] == "" {
		t.Fatalf("registration: %d %v", status, reg)
	}
	if status, _ := register(t, inst.URL, map[string]any{"redirect_uris": []string{"http://example.com/cb"}}); status != http.StatusBadRequest {
		t.Errorf("registering an http redirect off loopback: %d, want 400", status)
	}
	agent := newOAuthAgent(inst.URL, reg["client_id"].(string), cb)
	b := newAgentBrowser(t, inst.URL)
	verifier := oauth2.GenerateVerifier()
	consent := b.authorize(agent.conf.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier), resourceOf(inst.URL, "demo")),
		"admin", adminPassword, "allow")
	if got := consent.Find(`[data-testid=consent-client-name]`).Text(); got != "Test <b>Agent</b>" {
		t.Errorf("consent page names the client %q, want its name as text", got)
	}
	if consent.Find(`[data-testid=consent-unverified]`).Length() != 1 {
		t.Error("consent page does not say a registered client is unverified")
	}
	if got := consent.Find(`[data-testid=consent-server]`).Text(); got != "demo" {
		t.Errorf("consent page lists servers %q, want demo", got)
	}
	q := cb.query()
	if q.Get("state") != "st-1" || q.Get("code") == "" {
		t.Fatalf("back at the agent with %v", q)
	}
	if _, err := agent.conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier())); err == nil {
		t.Error("a code was exchanged with the wrong PKCE verifier")
	}
	tok, err := agent.conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if _, err := agent.conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier)); err == nil {
		t.Error("a code was exchanged twice")
	}
	if !strings.HasPrefix(tok.AccessToken, "rnda_") || tok.RefreshToken == "" {
		t.Fatalf("tokens: access %.5s…, refresh given: %v", tok.AccessToken, tok.RefreshToken != "")
	}
	as := inst.AuthServer()
	g, err := as.Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if g.User.Name != "admin" || g.ClientName != "Test <b>Agent</b>" || !slices.Equal(g.Servers, []string{"demo"}) {
		t.Errorf("grant: user %s, client %q, servers %v; want admin, the client's name, [demo] only", g.User.Name, g.ClientName, g.Servers)
	}

	// Refresh: a new pair; the old refresh token is refused after its use.
	old := tok.RefreshToken
	tok.Expiry = time.Now().Add(-time.Minute)
	fresh, err := agent.conf.TokenSource(ctx, tok).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if fresh.AccessToken == tok.AccessToken || fresh.RefreshToken == old || fresh.RefreshToken == "" {
		t.Fatal("refresh did not rotate the tokens")
	}
	if _, err := as.Verify(ctx, fresh.AccessToken); err != nil {
		t.Errorf("the refreshed access token: %v", err)
	}
	if _, err := agent.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: old, Expiry: tok.Expiry}).Token(); err == nil {
		t.Error("a used refresh token was accepted again")
	}

	// The account page lists the agent; disconnecting revokes its tokens.
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	page := c.page(inst.URL + "/account")
	row := page.Find(`[data-testid=agent]`)
	if row.Length() != 1 || row.Find(`[data-testid=agent-name]`).Text() != "Test <b>Agent</b>" ||
		row.Find(`[data-testid=agent-servers]`).Text() != "demo" {
		t.Fatalf("connected agents: %d rows, %q", row.Length(), row.Text())
	}
	href := row.Find(`form`).AttrOr("action", "")
	if status, _ := c.post(inst.URL+href, url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("disconnect: %d", status)
	}
	for _, at := range []string{tok.AccessToken, fresh.AccessToken} {
		if _, err := as.Verify(ctx, at); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("an access token of a disconnected agent: %v, want not found", err)
		}
	}
	if _, err := agent.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: fresh.RefreshToken, Expiry: tok.Expiry}).Token(); err == nil {
		t.Error("a refresh token of a disconnected agent still works")
	}
	_, audit := c.do("GET", inst.URL+"/admin/audit", "", "")
	for _, action := range []string{"oauth.consent", "oauth.disconnect"} {
		if !strings.Contains(string(audit), action) {
			t.Errorf("the audit log lacks %s", action)
		}
	}
}

// TestOAuthRefusals: PKCE missing or plain, unknown resources, a token
// asked for a server not granted, Deny, and revocation.
func TestOAuthRefusals(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	demo := demoServer(t, nil)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demo + ",other=" + demo}, nil)
	ctx := context.Background()
	cb := newAgentCallback(t)
	_, reg := register(t, inst.URL, map[string]any{"client_name": "Refused", "redirect_uris": []string{cb.redirectURI()}})
	agent := newOAuthAgent(inst.URL, reg["client_id"].(string), cb)
	b := newAgentBrowser(t, inst.URL)
	for _, tc := range []struct {
		name string
		opts []oauth2.AuthCodeOption
		want string
	}{
		{"PKCE missing", []oauth2.AuthCodeOption{resourceOf(inst.URL, "demo")}, "invalid_request"},
		{"PKCE plain", []oauth2.AuthCodeOption{resourceOf(inst.URL, "demo"),
			oauth2.SetAuthURLParam("code_challenge", oauth2.GenerateVerifier()),
			oauth2.SetAuthURLParam("code_challenge_method", "plain")}, "invalid_request"},
		{"unknown server", []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
			resourceOf(inst.URL, "nosuch")}, "invalid_target"},
		{"another site's resource", []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
			oauth2.SetAuthURLParam("resource", "https://elsewhere.example/mcp/demo")}, "invalid_target"},
		{"no resource", []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(oauth2.GenerateVerifier())}, "invalid_target"},
		{"deny", []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
			resourceOf(inst.URL, "demo")}, "access_denied"},
	} {
		b.authorize(agent.conf.AuthCodeURL(tc.name, tc.opts...), "admin", adminPassword, "deny")
		if q := agent.cb.query(); q.Get("error") != tc.want || q.Get("code") != "" || q.Get("state") != tc.name {
			t.Errorf("%s: back at the agent with %v, want error=%s", tc.name, q, tc.want)
		}
	}

	// A token for demo and other; then a code for demo asked to give a
	// token for other (RFC 8707 at the token endpoint).
	tok := agent.signIn(t, b, inst.URL, "demo", "other")
	as := inst.AuthServer()
	if g, err := as.Verify(ctx, tok.AccessToken); err != nil || !slices.Equal(g.Servers, []string{"demo", "other"}) {
		t.Fatalf("token for both: %v %v", g, err)
	}
	verifier := oauth2.GenerateVerifier()
	b.authorize(agent.conf.AuthCodeURL("st-2", oauth2.S256ChallengeOption(verifier), resourceOf(inst.URL, "demo")),
		"admin", adminPassword, "allow")
	_, err := agent.conf.Exchange(ctx, agent.cb.query().Get("code"), oauth2.VerifierOption(verifier), resourceOf(inst.URL, "other"))
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_target" {
		t.Errorf("a token for a server the code was not granted for: %v, want invalid_target", err)
	}

	// A token response is JSON that no cache keeps.
	resp, err := http.PostForm(inst.URL+"/oauth/token", url.Values{"grant_type": {"authorization_code"},
		"code": {"rndc_nosuch"}, "client_id": {agent.conf.ClientID}, "redirect_uri": {cb.redirectURI()}, "code_verifier": {verifier}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Header.Get("Content-Type"), "application/json") ||
		resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("token endpoint answered an unknown code %d, %q, %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
	}

	// Revocation (RFC 7009) of an access token.
	form := url.Values{"token": {tok.AccessToken}, "client_id": {agent.conf.ClientID}}
	resp, err = http.PostForm(inst.URL+"/oauth/revoke", form)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := as.Verify(ctx, tok.AccessToken); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a revoked token: %v, want not found", err)
	}
}

// TestOAuthMetadata: the authorization server metadata (RFC 8414) and each
// server's protected resource metadata (RFC 9728).
func TestOAuthMetadata(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	getJSON := func(path string) (int, map[string]any) {
		resp, err := http.Get(inst.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		status, m := getJSON(path)
		want := map[string]any{"issuer": inst.URL, "authorization_endpoint": inst.URL + "/authorize",
			"token_endpoint": inst.URL + "/oauth/token", "registration_endpoint": inst.URL + "/oauth/register",
			"revocation_endpoint": inst.URL + "/oauth/revoke", "client_id_metadata_document_supported": true}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s %s = %v, want %v", path, k, m[k], v)
			}
		}
		if status != http.StatusOK || !sameStrings(m["code_challenge_methods_supported"], "S256") ||
			!sameStrings(m["grant_types_supported"], "authorization_code", "refresh_token") ||
			!sameStrings(m["response_types_supported"], "code") ||
			!sameStrings(m["token_endpoint_auth_methods_supported"], "none", "client_secret_post", "client_secret_basic") {
			t.Errorf("%s: %d %v", path, status, m)
		}
	}
	status, m := getJSON("/.well-known/oauth-protected-resource/mcp/demo")
	if status != http.StatusOK || m["resource"] != inst.URL+"/mcp/demo" ||
		!sameStrings(m["authorization_servers"], inst.URL) || !sameStrings(m["bearer_methods_supported"], "header") {
		t.Errorf("protected resource metadata: %d %v", status, m)
	}
	if status, keys := getJSON("/oauth/keys"); status != http.StatusOK || len(keys["keys"].([]any)) != 1 {
		t.Errorf("keys: %d %v", status, keys)
	}
	if status, _ := getJSON("/.well-known/oauth-protected-resource/mcp/nosuch"); status != http.StatusNotFound {
		t.Errorf("metadata of a server that does not exist: %d", status)
	}
}

func sameStrings(v any, want ...string) bool {
	list, _ := v.([]any)
	if len(list) != len(want) {
		return false
	}
	for i, w := range want {
		if list[i] != w {
			return false
		}
	}
	return true
}

// startInstanceWith starts an app as startInstance does, its configuration
// changed first by change.
func startInstanceWith(t *testing.T, dbURL string, env map[string]string, change func(*app.Config)) *instance {
	t.Helper()
	cfg, err := app.LoadConfig(func(k string) string {
		switch k {
		case "DATABASE_URL":
			return dbURL
		case "ADMIN_PASSWORD":
			return adminPassword
		case "LISTEN_ADDR":
			return "127.0.0.1:0"
		}
		return env[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	change(&cfg)
	a, err := app.Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
	})
	return &instance{App: a, URL: "http://" + a.Addr()}
}

// TestOAuthClientMetadataDocument: an agent whose client_id is the https
// URL of its metadata document signs in without registering.
func TestOAuthClientMetadataDocument(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	cb := newAgentCallback(t)
	var docURL string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := docURL
		if r.URL.Path == "/liar.json" {
			id = "https://elsewhere.example/agent.json"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": id, "client_name": "Metadata Agent",
			"redirect_uris": []string{cb.redirectURI()}, "token_endpoint_auth_method": "none"})
	}))
	t.Cleanup(docs.Close)
	docURL = docs.URL + "/agent.json"
	roots := x509.NewCertPool()
	roots.AddCert(docs.Certificate())
	inst := startInstanceWith(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, func(c *app.Config) {
		c.ClientMetadataLoopback, c.ClientMetadataRootCAs = true, roots
	})
	agent := newOAuthAgent(inst.URL, docURL, cb)
	b := newAgentBrowser(t, inst.URL)
	verifier := oauth2.GenerateVerifier()
	consent := b.authorize(agent.conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), resourceOf(inst.URL, "demo")),
		"admin", adminPassword, "allow")
	if consent == nil || consent.Find(`[data-testid=consent-client-name]`).Text() != "Metadata Agent" ||
		consent.Find(`[data-testid=consent-unverified]`).Length() != 0 ||
		strings.TrimSpace(consent.Find(`[data-testid=consent-client-id]`).Text()) != docURL {
		t.Fatalf("consent page for a metadata document client: %v", consent != nil)
	}
	tok, err := agent.conf.Exchange(context.Background(), cb.query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if g, err := inst.AuthServer().Verify(context.Background(), tok.AccessToken); err != nil || g.ClientID != docURL {
		t.Fatalf("verify: %v %v", g, err)
	}
	// A document whose client_id is not its own URL names no client.
	liar := newOAuthAgent(inst.URL, docs.URL+"/liar.json", cb)
	resp, _ := b.get(liar.conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), resourceOf(inst.URL, "demo")))
	if resp.StatusCode == http.StatusOK && resp.Request.URL.Path == "/oauth/consent" {
		t.Error("a client whose metadata document names another client_id reached the consent page")
	}
}

// TestOAuthServerAcrossInstances: two instances behind one PUBLIC_URL. The
// person consents on one; the agent exchanges the code on the other and
// refreshes on the first; either verifies the tokens.
func TestOAuthServerAcrossInstances(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	const public = "https://rounds.example"
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "PUBLIC_URL": public}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	ctx := context.Background()
	cb := newAgentCallback(t)
	_, reg := register(t, b.URL, map[string]any{"client_name": "Roaming", "redirect_uris": []string{cb.redirectURI()}})
	agent := newOAuthAgent(a.URL, reg["client_id"].(string), cb)
	verifier := oauth2.GenerateVerifier()
	newAgentBrowser(t, a.URL).authorize(agent.conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier),
		resourceOf(public, "demo")), "admin", adminPassword, "allow")
	onB := newOAuthAgent(b.URL, agent.conf.ClientID, cb)
	tok, err := onB.conf.Exchange(ctx, cb.query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange on B of a code given on A: %v", err)
	}
	tok.Expiry = time.Now().Add(-time.Minute)
	fresh, err := agent.conf.TokenSource(ctx, tok).Token()
	if err != nil {
		t.Fatalf("refresh on A: %v", err)
	}
	for _, inst := range []*instance{a, b} {
		if g, err := inst.AuthServer().Verify(ctx, fresh.AccessToken); err != nil || !slices.Equal(g.Servers, []string{"demo"}) {
			t.Errorf("verify on %s: %v %v", inst.URL, g, err)
		}
	}
}
