// Package sso signs people in through an OpenID Connect provider: the
// authorization code flow with PKCE, state and nonce, the ID token checked
// by go-oidc (signature, issuer, audience, expiry), and what the provider
// says of the person (their name, e-mail and groups) read from the token
// and the userinfo endpoint.
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
	"strings"
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

// PendingTTL bounds how long a sign-in may take at the provider.
const PendingTTL = 10 * time.Minute

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
	// HTTP reaches the provider; nil for a client with a 15 s timeout.
	HTTP *http.Client
}

// Client signs people in at one provider. The provider's metadata is
// fetched at the first sign-in, and again after a failure, so an instance
// starts while its provider is down.
type Client struct {
	cfg  Config
	http *http.Client

	mu         sync.Mutex
	provider   *oidc.Provider
	endSession string
	groupsOK   bool // the provider lists the groups scope
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = DefaultGroupsClaim
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 15 * time.Second}
	}
	return &Client{cfg: cfg, http: hc}
}

// Name is what the sign-in button calls the provider.
func (c *Client) Name() string { return c.cfg.Name }

// Issuer is the provider's issuer URL.
func (c *Client) Issuer() string { return c.cfg.Issuer }

// ErrProvider says the provider could not be reached or misbehaved.
var ErrProvider = errors.New("the sign-on provider could not be reached")

// ErrRefused is a callback that signs nobody in: forged, replayed, too
// late, or refused by the provider.
var ErrRefused = errors.New("this sign-in could not be completed; start again")

func (c *Client) discover(ctx context.Context) (*oidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, nil
	}
	// The key set fetches keys later with this context: it must outlive
	// the request.
	pctx := oidc.ClientContext(context.WithoutCancel(ctx), c.http)
	p, err := oidc.NewProvider(pctx, c.cfg.Issuer)
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
	c.provider, c.endSession = p, meta.EndSession
	c.groupsOK = slices.Contains(meta.Scopes, "groups")
	return p, nil
}

func (c *Client) oauth(p *oidc.Provider) *oauth2.Config {
	scopes := []string{oidc.ScopeOpenID, "profile", "email"}
	if c.groupsOK {
		// Some providers (Dex) send groups only when asked; others send
		// them as configured and may refuse a scope they do not know.
		scopes = append(scopes, "groups")
	}
	return &oauth2.Config{ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret, Endpoint: p.Endpoint(),
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
	p, err := c.discover(ctx)
	if err != nil {
		return "", Pending{}, err
	}
	pend := Pending{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Next: next, At: time.Now()}
	u := c.oauth(p).AuthCodeURL(pend.State, oidc.Nonce(pend.Nonce), oauth2.S256ChallengeOption(pend.Verifier))
	return u, pend, nil
}

// Identity is who the provider says signed in.
type Identity struct {
	Issuer, Subject string
	Name            string // preferred_username, else the e-mail's local part
	Email           string
	Groups          []string
	Admin           bool
	// IDToken is the raw token, the hint for the provider's sign-out.
	IDToken string
}

// Finish completes a sign-in from the provider's callback: the state must
// be the one this browser keeps, the code is exchanged with the PKCE
// verifier, and the ID token must be valid and carry this browser's nonce.
func (c *Client) Finish(ctx context.Context, pend Pending, query url.Values) (*Identity, error) {
	if pend.State == "" || subtle.ConstantTimeCompare([]byte(query.Get("state")), []byte(pend.State)) != 1 ||
		time.Since(pend.At) > PendingTTL {
		return nil, ErrRefused
	}
	if e := query.Get("error"); e != "" {
		return nil, fmt.Errorf("%w: the provider said %q", ErrRefused, e)
	}
	p, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	hctx := oidc.ClientContext(ctx, c.http)
	oc := c.oauth(p)
	tok, err := oc.Exchange(hctx, query.Get("code"), oauth2.VerifierOption(pend.Verifier))
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
	idt, err := p.Verifier(&oidc.Config{ClientID: c.cfg.ClientID}).Verify(hctx, raw)
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
	if p.UserInfoEndpoint() != "" {
		// Many providers put the profile and groups in userinfo only.
		ui, err := p.UserInfo(hctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return nil, fmt.Errorf("%w: userinfo: %v", ErrProvider, err)
		}
		if ui.Subject != idt.Subject {
			return nil, fmt.Errorf("%w: userinfo is of someone else", ErrRefused)
		}
		more := map[string]any{}
		if err := ui.Claims(&more); err == nil {
			for k, v := range more {
				if _, ok := claims[k]; !ok {
					claims[k] = v
				}
			}
		}
	}
	id := &Identity{Issuer: idt.Issuer, Subject: idt.Subject, IDToken: raw}
	id.Email, _ = claims["email"].(string)
	id.Name, _ = claims["preferred_username"].(string)
	if id.Name == "" {
		id.Name, _, _ = strings.Cut(id.Email, "@")
	}
	id.Groups = stringsOf(claims[c.cfg.GroupsClaim])
	id.Admin = slices.ContainsFunc(id.Groups, func(g string) bool {
		return slices.ContainsFunc(c.cfg.AdminGroups, func(a string) bool { return strings.EqualFold(a, g) })
	})
	return id, nil
}

// EndSessionURL is where sign-out sends the browser so that the provider
// signs the person out too; "" when the provider has no such endpoint.
func (c *Client) EndSessionURL(ctx context.Context, idToken string) string {
	if _, err := c.discover(ctx); err != nil || c.endSession == "" {
		return ""
	}
	u, err := url.Parse(c.endSession)
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

// stringsOf reads a claim that is a list of strings, or one string.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func random() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
