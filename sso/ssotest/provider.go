// Package ssotest runs a real OpenID Connect provider for tests: the
// example provider of github.com/zitadel/oidc (its in-memory storage and
// login page, refresh tokens for offline_access), with people, their
// groups, and one web client, served on a port of its own. Tokens are made
// and signed by that provider, never by the test. A test may change a
// person's groups or delete them at any time, as an administrator at a
// real provider would.
package ssotest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Person is someone who can sign in at the provider.
type Person struct {
	ID       string // the subject
	Username string // preferred_username
	Password string
	Email    string
	Groups   []string
	// Unverified sends email_verified false.
	Unverified bool
	// Claims are more claims of the ID token and userinfo, such as hd.
	Claims map[string]any
}

// Provider is a running provider.
type Provider struct {
	Issuer       string
	ClientID     string
	ClientSecret string

	mu        sync.Mutex
	groups    map[string][]string // by subject
	claims    map[string]map[string]any
	deleted   map[string]bool
	refreshes map[string]int // refresh token grants, by subject
	callbacks []string       // the redirects to the client's callback, in order
	redirects []string
	logouts   []string
	requests  []string // every request's path and query
}

// Start runs a provider with people and one client whose redirect URI is
// redirectURL and whose post-logout URI is postLogoutURL, until the test
// ends. More may be allowed with Allow.
func Start(t testing.TB, redirectURL, postLogoutURL string, people ...Person) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{Issuer: "http://" + ln.Addr().String(), ClientID: "rounds", ClientSecret: "rounds-client-secret",
		groups: map[string][]string{}, claims: map[string]map[string]any{}, deleted: map[string]bool{},
		refreshes: map[string]int{}, redirects: []string{redirectURL}, logouts: []string{postLogoutURL}}
	users := map[string]map[string]any{}
	for _, x := range people {
		users[x.ID] = map[string]any{"ID": x.ID, "Username": x.Username, "Password": x.Password, "Email": x.Email,
			"EmailVerified": !x.Unverified, "FirstName": x.Username, "LastName": "Test", "PreferredLanguage": "en"}
		p.groups[x.ID] = x.Groups
		p.claims[x.ID] = x.Claims
	}
	file := filepath.Join(t.TempDir(), "users.json")
	b, _ := json.Marshal(users)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	us, err := storage.StoreFromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	client := storage.WebClient(p.ClientID, p.ClientSecret, redirectURL)
	st := &groupStorage{Storage: storage.NewStorageWithClients(us, map[string]*storage.Client{p.ClientID: client}), p: p}
	router := exampleop.SetupServer(p.Issuer, st, nil, false)
	srv := &http.Server{Handler: p.watch(router)}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// Allow registers another redirect URI and post-logout URI of the client,
// such as another instance's.
func (p *Provider) Allow(redirectURL, postLogoutURL string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redirects = append(p.redirects, redirectURL)
	p.logouts = append(p.logouts, postLogoutURL)
}

// SetGroups changes a person's groups, as an administrator at the
// provider would; their next sign-in, refresh or userinfo carries the new
// ones.
func (p *Provider) SetGroups(subject string, groups ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groups[subject] = groups
}

// Delete removes a person, as an administrator at the provider would:
// their refresh tokens and access tokens are refused from now on.
func (p *Provider) Delete(subject string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted[subject] = true
}

// Refreshes counts the refresh token grants the provider answered for a
// person.
func (p *Provider) Refreshes(subject string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refreshes[subject]
}

// LogIn signs who in at the provider's login page the way a browser
// would, with hc, which keeps cookies: it opens start, which leads to the
// login page, and sends the form. It returns the last response, where hc's
// redirects ended; the caller closes its body.
func LogIn(t testing.TB, hc *http.Client, start string, who Person) *http.Response {
	t.Helper()
	resp, err := hc.Get(start)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no login form at the provider (%d):\n%s", resp.StatusCode, page)
	}
	form := url.Values{"id": {string(m[1])}, "username": {who.Username}, "password": {who.Password}}
	resp, err = hc.PostForm(resp.Request.URL.ResolveReference(&url.URL{Path: "/login/username"}).String(), form)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Blackhole is the issuer URL of a provider that is down the worst way:
// it takes connections and never answers.
func Blackhole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// Callbacks are the URLs the provider sent browsers to at the client,
// each with its code and state, oldest first.
func (p *Provider) Callbacks() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.callbacks...)
}

// Requests are the paths and queries of every request the provider got.
func (p *Provider) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// claimsOf are the groups and other claims of a person; errGone once
// they are deleted.
func (p *Provider) claimsOf(subject string) (map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted[subject] {
		return nil, errGone
	}
	out := map[string]any{"groups": append([]string(nil), p.groups[subject]...)}
	for k, v := range p.claims[subject] {
		out[k] = v
	}
	return out, nil
}

var errGone = errors.New("no such user")

// watch records every redirect to the client's callback.
func (p *Provider) watch(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, r.URL.RequestURI())
		p.mu.Unlock()
		next.ServeHTTP(&watcher{ResponseWriter: w, p: p}, r)
	})
}

type watcher struct {
	http.ResponseWriter
	p *Provider
}

func (w *watcher) WriteHeader(code int) {
	loc := w.Header().Get("Location")
	w.p.mu.Lock()
	for _, r := range w.p.redirects {
		if code/100 == 3 && strings.HasPrefix(loc, r+"?") {
			w.p.callbacks = append(w.p.callbacks, loc)
		}
	}
	w.p.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

// groupStorage is the example storage with a groups claim in the ID token
// and userinfo, as Okta and Entra send it, the client's URIs, and people
// who may be deleted.
type groupStorage struct {
	*storage.Storage
	p *Provider
}

func (s *groupStorage) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, token op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, ui, token, scopes); err != nil {
		return err
	}
	return s.addClaims(ui, token.GetSubject())
}

func (s *groupStorage) SetUserinfoFromToken(ctx context.Context, ui *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, ui, tokenID, subject, origin); err != nil {
		return err
	}
	return s.addClaims(ui, ui.Subject)
}

func (s *groupStorage) addClaims(ui *oidc.UserInfo, subject string) error {
	claims, err := s.p.claimsOf(subject)
	if err != nil {
		return err
	}
	for k, v := range claims {
		ui.AppendClaims(k, v)
	}
	return nil
}

// TokenRequestByRefreshToken refuses the refresh tokens of people deleted
// (the provider answers invalid_grant), and counts the others.
func (s *groupStorage) TokenRequestByRefreshToken(ctx context.Context, refreshToken string) (op.RefreshTokenRequest, error) {
	r, err := s.Storage.TokenRequestByRefreshToken(ctx, refreshToken)
	if err != nil {
		return nil, err
	}
	if _, err := s.p.claimsOf(r.GetSubject()); err != nil {
		return nil, err
	}
	s.p.mu.Lock()
	s.p.refreshes[r.GetSubject()]++
	s.p.mu.Unlock()
	return r, nil
}

func (s *groupStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return uriClient{Client: c, redirects: slices.Clone(s.p.redirects), logouts: slices.Clone(s.p.logouts)}, nil
}

type uriClient struct {
	op.Client
	redirects, logouts []string
}

func (c uriClient) RedirectURIs() []string           { return c.redirects }
func (c uriClient) PostLogoutRedirectURIs() []string { return c.logouts }
