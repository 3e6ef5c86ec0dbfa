package mcptest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// AuthServer is an OAuth 2.1 authorization server for tests, on loopback:
// RFC 8414 (or only OpenID Connect) metadata, dynamic registration, Client
// ID Metadata Documents, an authorization endpoint that approves at once,
// PKCE S256, the resource parameter, one-time codes, refresh tokens and
// RFC 9207's iss. It is strict where a real one is: anything a client gets
// wrong is refused with the OAuth error a real server would send.
type AuthServer struct {
	URL string
	srv *httptest.Server

	mu sync.Mutex
	// Settings a test may change between steps.
	TokenTTL  time.Duration       // access tokens' lifetime; default an hour
	WrongIss  bool                // send another issuer's iss back
	OIDCOnly  bool                // publish only OpenID Connect discovery
	NoIss     bool                // neither send iss nor advertise it
	CIMD      bool                // take Client ID Metadata Documents (URL client ids)
	Consent   bool                // show a sign-in page instead of approving at once
	Silent    bool                // publish no metadata at all (revision 2025-03-26's defaults)
	clients   map[string][]string // client id → redirect URIs
	codes     map[string]*grant
	access    map[string]*grant
	refresh   map[string]*grant
	Refreshes int // refresh grants served
	// Foreign counts token requests carrying a refresh token or code this
	// server never issued: another server's, sent to the wrong place.
	Foreign int
	// Documents are the Client ID Metadata Documents fetched, by URL.
	Documents map[string]map[string]any
}

type grant struct {
	clientID, challenge, redirect, resource, scope string
	used                                           bool
	expires                                        time.Time
}

// NewAuthServer starts an authorization server for the test.
func NewAuthServer(tb testing.TB) *AuthServer {
	as := &AuthServer{TokenTTL: time.Hour, clients: map[string][]string{}, codes: map[string]*grant{},
		access: map[string]*grant{}, refresh: map[string]*grant{}, Documents: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.metadata(false))
	mux.HandleFunc("GET /.well-known/openid-configuration", as.metadata(true))
	mux.HandleFunc("POST /register", as.register)
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.token)
	as.srv = httptest.NewServer(mux)
	as.URL = as.srv.URL
	tb.Cleanup(as.srv.Close)
	return as
}

// Close stops the server, as an authorization server that went down.
func (as *AuthServer) Close() { as.srv.Close() }

// Set changes settings under the server's lock.
func (as *AuthServer) Set(f func(as *AuthServer)) {
	as.mu.Lock()
	defer as.mu.Unlock()
	f(as)
}

// Elapse lets d pass for the access tokens issued so far, without a test
// waiting for it: those whose lifetime ends within d have run out, and
// Check, and so Protect, refuse them. Those issued later last TokenTTL.
func (as *AuthServer) Elapse(d time.Duration) {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, g := range as.access {
		g.expires = g.expires.Add(-d)
	}
}

// RefreshCount is how many refresh grants were served.
func (as *AuthServer) RefreshCount() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.Refreshes
}

func random() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func asJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, code, desc string) {
	asJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
}

func (as *AuthServer) metadata(oidc bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		as.mu.Lock()
		oidcOnly, noIss, cimd, silent := as.OIDCOnly, as.NoIss, as.CIMD, as.Silent
		as.mu.Unlock()
		if (!oidc && oidcOnly) || silent {
			http.NotFound(w, r)
			return
		}
		asJSON(w, http.StatusOK, map[string]any{
			"issuer":                                         as.URL,
			"authorization_endpoint":                         as.URL + "/authorize",
			"token_endpoint":                                 as.URL + "/token",
			"registration_endpoint":                          as.URL + "/register",
			"response_types_supported":                       []string{"code"},
			"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":               []string{"S256"},
			"token_endpoint_auth_methods_supported":          []string{"none"},
			"scopes_supported":                               []string{"mcp:tools", "mcp:admin", "offline_access"},
			"client_id_metadata_document_supported":          cimd,
			"authorization_response_iss_parameter_supported": !noIss,
		})
	}
}

func (as *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		AppType      string   `json:"application_type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		oauthError(w, "invalid_client_metadata", "redirect_uris is required")
		return
	}
	if req.AppType != "web" && req.AppType != "native" {
		// MCP asks clients to say which they are (SEP-837).
		oauthError(w, "invalid_client_metadata", "application_type must be web or native")
		return
	}
	id := "client-" + random()
	as.mu.Lock()
	as.clients[id] = req.RedirectURIs
	as.mu.Unlock()
	asJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs,
		"token_endpoint_auth_method": "none"})
}

// authorize approves at once, as a person who signs in and agrees would;
// with Consent set, it shows a sign-in page first whose form comes back
// here by POST, with a name.
func (as *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	consent := as.Consent
	as.mu.Unlock()
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("username") == "" {
			http.Error(w, "sign in with a name", http.StatusBadRequest)
			return
		}
		q = r.PostForm
	} else if consent {
		consentPage(w, q)
		return
	}
	doc := as.fetchDocument(q.Get("client_id"))
	as.mu.Lock()
	defer as.mu.Unlock()
	redirects, known := as.clients[q.Get("client_id")]
	if doc != nil {
		known = true
		redirects = nil
		if uris, ok := doc["redirect_uris"].([]any); ok {
			for _, u := range uris {
				if s, ok := u.(string); ok {
					redirects = append(redirects, s)
				}
			}
		}
	}
	switch {
	case !known:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case !slices.Contains(redirects, q.Get("redirect_uri")):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := url.Values{"state": {q.Get("state")}}
	iss := as.URL
	if as.WrongIss {
		iss = "http://evil.test"
	}
	if !as.NoIss {
		v.Set("iss", iss)
	}
	switch {
	case q.Get("response_type") != "code":
		v.Set("error", "unsupported_response_type")
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		v.Set("error", "invalid_request")
	case q.Get("resource") == "":
		v.Set("error", "invalid_target")
	default:
		code := random()
		as.codes[code] = &grant{clientID: q.Get("client_id"), challenge: q.Get("code_challenge"),
			redirect: q.Get("redirect_uri"), resource: q.Get("resource"), scope: q.Get("scope")}
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// consentPage is the authorization server's sign-in page: a name and an
// Allow button, the request's parameters carried along.
func consentPage(w http.ResponseWriter, q url.Values) {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title>` +
		`<meta name="viewport" content="width=device-width, initial-scale=1"></head><body><main>` +
		`<h1>Sign in to the authorization server</h1><form method="post" action="/authorize">`)
	for k, vs := range q {
		for _, v := range vs {
			b.WriteString(`<input type="hidden" name="` + html.EscapeString(k) + `" value="` + html.EscapeString(v) + `">`)
		}
	}
	b.WriteString(`<label for="username">Name</label> <input id="username" name="username" autocomplete="username" required>` +
		` <button type="submit" id="allow">Sign in and allow</button></form></main></body></html>`)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, b.String())
}

// fetchDocument reads a Client ID Metadata Document when client id is an
// https (or, for tests, loopback http) URL and the server takes them. The
// document must name itself as client_id, as the draft requires; anything
// else is no document.
func (as *AuthServer) fetchDocument(clientID string) map[string]any {
	as.mu.Lock()
	cimd := as.CIMD
	as.mu.Unlock()
	u, err := url.Parse(clientID)
	if !cimd || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Path == "" {
		return nil
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(clientID)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var doc map[string]any
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&doc) != nil ||
		doc["client_id"] != clientID {
		return nil
	}
	as.mu.Lock()
	as.Documents[clientID] = doc
	as.mu.Unlock()
	return doc
}

// Counts says how many refresh grants were served, and how many token
// requests carried a code or refresh token this server never issued.
func (as *AuthServer) Counts() (refreshes, foreign int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.Refreshes, as.Foreign
}

func (as *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request", "bad form")
		return
	}
	f := r.PostForm
	as.mu.Lock()
	defer as.mu.Unlock()
	var g *grant
	switch f.Get("grant_type") {
	case "authorization_code":
		g = as.codes[f.Get("code")]
		if g == nil {
			as.Foreign++
		}
		if g == nil || g.used {
			oauthError(w, "invalid_grant", "the code is unknown or was already used")
			return
		}
		g.used = true
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			oauthError(w, "invalid_grant", "PKCE verification failed")
			return
		}
		if f.Get("redirect_uri") != g.redirect || f.Get("client_id") != g.clientID {
			oauthError(w, "invalid_grant", "redirect_uri or client_id does not match")
			return
		}
	case "refresh_token":
		g = as.refresh[f.Get("refresh_token")]
		if g == nil {
			as.Foreign++
		}
		if g == nil || f.Get("client_id") != g.clientID {
			oauthError(w, "invalid_grant", "unknown refresh token")
			return
		}
		delete(as.refresh, f.Get("refresh_token")) // rotated: each is good once
		as.Refreshes++
	default:
		oauthError(w, "unsupported_grant_type", "")
		return
	}
	if f.Get("resource") != g.resource {
		oauthError(w, "invalid_target", "resource does not match the authorization")
		return
	}
	access := "at-" + random()
	issued := *g
	issued.expires = time.Now().Add(as.TokenTTL)
	as.access[access] = &issued
	out := map[string]any{"access_token": access, "token_type": "Bearer",
		"expires_in": int(as.TokenTTL / time.Second), "scope": g.scope}
	if strings.Contains(" "+g.scope+" ", " offline_access ") {
		rt := "rt-" + random()
		as.refresh[rt] = &issued
		out["refresh_token"] = rt
	}
	asJSON(w, http.StatusOK, out)
}

// Check reports whether a bearer token is good for resource, and its scopes.
func (as *AuthServer) Check(token, resource string) (scopes []string, ok bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	g := as.access[token]
	if g == nil || g.resource != resource || time.Now().After(g.expires) {
		return nil, false
	}
	return strings.Fields(g.scope), true
}

// Protect serves inner as an MCP server at /mcp that wants a token from as
// with scope: 401 with a WWW-Authenticate pointing at its Protected Resource
// Metadata without one, 403 insufficient_scope when a tool named in
// stepUp is called without the extra scope mcp:admin. It returns the MCP
// endpoint's URL.
func Protect(tb testing.TB, as *AuthServer, inner http.Handler, scope string, stepUp ...string) string {
	u, _ := ProtectMovable(tb, as, inner, scope, stepUp...)
	return u
}

// ProtectMovable is Protect, and a function that moves the server to
// another authorization server: its metadata names the new one, and only
// the new one's tokens are taken from then on.
func ProtectMovable(tb testing.TB, as *AuthServer, inner http.Handler, scope string, stepUp ...string) (string, func(to *AuthServer)) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	var mu sync.Mutex
	current := func() *AuthServer {
		mu.Lock()
		defer mu.Unlock()
		return as
	}
	resource := srv.URL + "/mcp"
	prm := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		asJSON(w, http.StatusOK, map[string]any{"resource": resource, "authorization_servers": []string{current().URL},
			"scopes_supported": []string{scope}, "bearer_methods_supported": []string{"header"}})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		scopes, ok := current().Check(token, resource)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+prm+`", scope="`+scope+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if len(stepUp) > 0 && !slices.Contains(scopes, "mcp:admin") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			for _, tool := range stepUp {
				if strings.Contains(string(body), `"name":"`+tool+`"`) {
					w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:admin", resource_metadata="`+prm+`"`)
					http.Error(w, "insufficient scope", http.StatusForbidden)
					return
				}
			}
		}
		inner.ServeHTTP(w, r)
	})
	return resource, func(to *AuthServer) {
		mu.Lock()
		as = to
		mu.Unlock()
	}
}
