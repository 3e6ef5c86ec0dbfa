// Package sso signs people in through an OpenID Connect provider: the
// authorization code flow with PKCE, state and nonce, the ID token checked
// by go-oidc (signature, issuer, audience, expiry), and what the provider
// says of the person (their name, e-mail and groups) read from the token
// and the userinfo endpoint, at sign-in and again later (check.go).
package sso

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// DefaultName is what the sign-in button says without OIDC_NAME.
const DefaultName = "single sign-on"

// DefaultGroupsClaim is the claim groups are read from without
// OIDC_GROUPS_CLAIM.
const DefaultGroupsClaim = "groups"

// DefaultTimeout bounds each request to the provider without OIDC_TIMEOUT.
const DefaultTimeout = 15 * time.Second

// DefaultRecheck is how often, at most, a signed-on account is checked
// again at the provider without OIDC_RECHECK.
const DefaultRecheck = 5 * time.Minute

// PendingTTL bounds how long a sign-in may take at the provider.
const PendingTTL = 10 * time.Minute

// failureMemory is how long a provider that could not be reached is not
// asked again: sign-ins meanwhile are told at once.
const failureMemory = 30 * time.Second

// Config is a provider and this app's client at it.
type Config struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// Name is what the sign-in button calls the provider.
	Name string
	// RedirectURL is PUBLIC_URL/auth/oidc/callback; PostLogoutURL is where
	// the provider sends people back after sign-out.
	RedirectURL   string
	PostLogoutURL string
	GroupsClaim   string
	// AdminGroups make the people in them admins.
	AdminGroups []string
	// AllowedDomains and AllowedGroups, when set, are who may sign in: a
	// verified e-mail (or Google's hd claim) of one of the domains, and a
	// member of one of the groups.
	AllowedDomains []string
	AllowedGroups  []string
	// TeamGroups are the groups that make people members of the teams
	// named like them; empty, every group does.
	TeamGroups []string
	// Timeout bounds each request to the provider; zero for DefaultTimeout.
	Timeout time.Duration
	// HTTP reaches the provider; nil for a client with Timeout.
	HTTP *http.Client
}

// Client signs people in at one provider. The provider's metadata is
// fetched at the first sign-in, and again after a failure, so an instance
// starts while its provider is down.
type Client struct {
	cfg  Config
	http *http.Client

	mu       sync.Mutex
	meta     *metadata
	fetching chan struct{} // closed when the discovery under way ends
	failed   time.Time     // when the provider last could not be reached
	failure  error
}

// metadata is what discovery learnt of the provider.
type metadata struct {
	provider   *oidc.Provider
	endSession string
	groupsOK   bool // the provider lists the groups scope
	offlineOK  bool // and offline_access
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = DefaultGroupsClaim
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	return &Client{cfg: cfg, http: hc}
}

// Name is what the sign-in button calls the provider.
func (c *Client) Name() string { return c.cfg.Name }

// Issuer is the provider's issuer URL.
func (c *Client) Issuer() string { return c.cfg.Issuer }

// Provider is what people are told the provider is: OIDC_NAME, else the
// issuer's host.
func (c *Client) Provider() string {
	if c.cfg.Name != DefaultName {
		return c.cfg.Name
	}
	if u, err := url.Parse(c.cfg.Issuer); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return c.cfg.Name
}

// ErrProvider says the provider could not be reached or misbehaved.
var ErrProvider = errors.New("the sign-on provider could not be reached")

// ErrRefused is a callback that signs nobody in: forged, replayed, too
// late, or refused by the provider.
var ErrRefused = errors.New("this sign-in could not be completed; start again")

// ErrNotAllowed is a person the provider vouches for who is outside
// AllowedDomains or AllowedGroups.
var ErrNotAllowed = errors.New("this account at the provider is not allowed here")

// discover returns the provider's metadata. Every request that needs it
// while it is fetched waits for that one fetch, up to its own deadline;
// a failure is remembered for failureMemory, so a provider that is down
// costs one timeout, not one per sign-in.
func (c *Client) discover(ctx context.Context) (*metadata, error) {
	c.mu.Lock()
	if c.meta != nil {
		defer c.mu.Unlock()
		return c.meta, nil
	}
	if err := c.downLocked(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	wait := c.fetching
	if wait == nil {
		wait = make(chan struct{})
		c.fetching = wait
		// The key set fetches keys later with this context: it must
		// outlive the request that started it.
		go c.fetch(context.WithoutCancel(ctx), wait)
	}
	c.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", ErrProvider, ctx.Err())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.meta != nil {
		return c.meta, nil
	}
	return nil, c.failure
}

// fetch reads the provider's metadata, for discover.
func (c *Client) fetch(ctx context.Context, done chan struct{}) {
	m, err := c.fetchMeta(oidc.ClientContext(ctx, c.http))
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failedLocked(err)
	} else {
		c.meta = m
	}
	c.fetching = nil
	close(done)
}

func (c *Client) fetchMeta(ctx context.Context) (*metadata, error) {
	p, err := oidc.NewProvider(ctx, c.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProvider, err)
	}
	var meta struct {
		EndSession string   `json:"end_session_endpoint"`
		Scopes     []string `json:"scopes_supported"`
	}
	if err := p.Claims(&meta); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProvider, err)
	}
	return &metadata{provider: p, endSession: meta.EndSession, groupsOK: slices.Contains(meta.Scopes, "groups"),
		offlineOK: slices.Contains(meta.Scopes, oidc.ScopeOfflineAccess)}, nil
}

// downLocked is the remembered failure to reach the provider, if recent.
func (c *Client) downLocked() error {
	if c.failure != nil && time.Since(c.failed) < failureMemory {
		return c.failure
	}
	return nil
}

// failedLocked remembers that the provider could not be reached.
func (c *Client) failedLocked(err error) {
	c.failed, c.failure = time.Now(), err
}

func (c *Client) oauth(m *metadata) *oauth2.Config {
	scopes := []string{oidc.ScopeOpenID, "profile", "email"}
	if m.groupsOK {
		// Some providers (Dex) send groups only when asked; others send
		// them as configured and may refuse a scope they do not know.
		scopes = append(scopes, "groups")
	}
	if m.offlineOK {
		// A refresh token lets Rounds ask again who the person is (check.go).
		scopes = append(scopes, oidc.ScopeOfflineAccess)
	}
	return &oauth2.Config{ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret, Endpoint: m.provider.Endpoint(),
		RedirectURL: c.cfg.RedirectURL, Scopes: scopes}
}

// Pending is a sign-in under way, kept in the browser's encrypted session
// cookie, which binds it to that browser.
type Pending struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	Next     string    `json:"x"`
	At       time.Time `json:"t"`
}

// Encode is the pending sign-in as a cookie value.
func (p Pending) Encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// DecodePending reads what Encode wrote; a bad value is no sign-in.
func DecodePending(s string) (Pending, bool) {
	var p Pending
	if err := json.Unmarshal([]byte(s), &p); err != nil || p.State == "" {
		return Pending{}, false
	}
	return p, true
}

// Begin starts a sign-in: the provider's URL to send the browser to, and
// what the browser must keep until it comes back.
func (c *Client) Begin(ctx context.Context, next string) (string, Pending, error) {
	m, err := c.discover(ctx)
	if err != nil {
		return "", Pending{}, err
	}
	pend := Pending{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Next: next, At: time.Now()}
	opts := []oauth2.AuthCodeOption{oidc.Nonce(pend.Nonce), oauth2.S256ChallengeOption(pend.Verifier)}
	if !m.offlineOK {
		// Google's way of asking for a refresh token; others ignore it.
		opts = append(opts, oauth2.AccessTypeOffline)
	}
	return c.oauth(m).AuthCodeURL(pend.State, opts...), pend, nil
}

// Identity is who the provider says signed in.
type Identity struct {
	Issuer, Subject string
	Name            string // preferred_username, else the e-mail's local part
	Email           string
	EmailVerified   bool // the provider's email_verified
	Groups          []string
	// Teams are the groups that make the person a member of the teams
	// named like them (TeamGroups).
	Teams []string
	Admin bool
	// IDToken is the raw token, the hint for the provider's sign-out.
	IDToken string
	// Grant lets Rounds ask the provider again later (Recheck).
	Grant Grant
}

// Finish completes a sign-in from the provider's callback: the state must
// be the one this browser keeps, the code is exchanged with the PKCE
// verifier, and the ID token must be valid and carry this browser's nonce.
// A person outside AllowedDomains or AllowedGroups is ErrNotAllowed, with
// their identity for the log.
func (c *Client) Finish(ctx context.Context, pend Pending, query url.Values) (*Identity, error) {
	if pend.State == "" || subtle.ConstantTimeCompare([]byte(query.Get("state")), []byte(pend.State)) != 1 ||
		time.Since(pend.At) > PendingTTL {
		return nil, ErrRefused
	}
	if e := query.Get("error"); e != "" {
		return nil, fmt.Errorf("%w: the provider said %q", ErrRefused, e)
	}
	m, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	hctx := oidc.ClientContext(ctx, c.http)
	tok, err := c.oauth(m).Exchange(hctx, query.Get("code"), oauth2.VerifierOption(pend.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("%w: %s", ErrRefused, re.ErrorCode)
		}
		return nil, fmt.Errorf("%w: %v", ErrProvider, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, fmt.Errorf("%w: the provider sent no ID token", ErrRefused)
	}
	idt, err := m.provider.Verifier(&oidc.Config{ClientID: c.cfg.ClientID}).Verify(hctx, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(pend.Nonce)) != 1 {
		return nil, fmt.Errorf("%w: the ID token is not this sign-in's", ErrRefused)
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if err := c.addUserInfo(hctx, m, tok, idt.Subject, claims); errors.Is(err, errUnknown) {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	} else if err != nil {
		return nil, err
	}
	id := c.identity(idt.Issuer, idt.Subject, claims)
	id.IDToken, id.Grant = raw, grantOf(tok)
	if !c.allowed(claims, id.Groups) {
		return id, ErrNotAllowed
	}
	return id, nil
}

// EndSessionURL is where sign-out sends the browser so that the provider
// signs the person out too; "" when the provider has no such endpoint.
func (c *Client) EndSessionURL(ctx context.Context, idToken string) string {
	m, err := c.discover(ctx)
	if err != nil || m.endSession == "" {
		return ""
	}
	u, err := url.Parse(m.endSession)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("client_id", c.cfg.ClientID)
	if idToken != "" {
		q.Set("id_token_hint", idToken)
	}
	if c.cfg.PostLogoutURL != "" {
		q.Set("post_logout_redirect_uri", c.cfg.PostLogoutURL)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func random() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
