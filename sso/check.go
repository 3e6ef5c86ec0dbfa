package sso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Grant is what the provider gave at sign-in that lets Rounds ask it again
// who the person is: a refresh token, or else an access token for the
// userinfo endpoint while it lasts. It is a credential, kept encrypted.
type Grant struct {
	RefreshToken string    `json:"r,omitempty"`
	AccessToken  string    `json:"a,omitempty"`
	Expiry       time.Time `json:"e,omitzero"`
}

// Encode is the grant as text, for the store to encrypt.
func (g Grant) Encode() string {
	if g == (Grant{}) {
		return ""
	}
	b, _ := json.Marshal(g)
	return string(b)
}

// DecodeGrant reads what Encode wrote; a bad value is no grant.
func DecodeGrant(s string) Grant {
	var g Grant
	if json.Unmarshal([]byte(s), &g) != nil {
		return Grant{}
	}
	return g
}

func grantOf(tok *oauth2.Token) Grant {
	return Grant{RefreshToken: tok.RefreshToken, AccessToken: tok.AccessToken, Expiry: tok.Expiry}
}

// ErrGone says the provider no longer vouches for the person: it does not
// know them any more, or refuses the grant (revoked, expired), or there is
// none left to ask with.
var ErrGone = errors.New("the provider no longer vouches for this person")

// errUnknown is the userinfo endpoint refusing the access token.
var errUnknown = errors.New("the provider refused the access token")

// Recheck asks the provider again who issuer's subject is, with the grant
// kept from their sign-in or last check: a refresh (whose ID token is
// checked as at sign-in) and the userinfo endpoint. The identity carries
// the grant to keep for next time. ErrGone and ErrNotAllowed mean the
// person must lose what the provider gave them; ErrProvider that it could
// not be asked.
func (c *Client) Recheck(ctx context.Context, issuer, subject string, g Grant) (*Identity, error) {
	if issuer != c.cfg.Issuer {
		return nil, fmt.Errorf("%w: they signed on at %s, not at this provider", ErrGone, issuer)
	}
	if g.RefreshToken == "" && (g.AccessToken == "" || !g.Expiry.IsZero() && time.Now().After(g.Expiry)) {
		return nil, fmt.Errorf("%w: no refresh token, and the access token has expired", ErrGone)
	}
	m, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	err = c.downLocked()
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	hctx := oidc.ClientContext(ctx, c.http)
	claims := map[string]any{}
	tok := &oauth2.Token{AccessToken: g.AccessToken, Expiry: g.Expiry}
	if g.RefreshToken != "" {
		if tok, err = c.refresh(hctx, m, g.RefreshToken, subject, claims); err != nil {
			return nil, err
		}
	}
	if err := c.addUserInfo(hctx, m, tok, subject, claims); errors.Is(err, errUnknown) {
		return nil, fmt.Errorf("%w: %v", ErrGone, err)
	} else if err != nil {
		c.remember(err)
		return nil, err
	}
	if len(claims) == 0 {
		return nil, fmt.Errorf("%w: the provider said nothing of the person", ErrGone)
	}
	id := c.identity(issuer, subject, claims)
	id.Grant = grantOf(tok)
	if !c.allowed(claims, id.Groups) {
		return id, ErrNotAllowed
	}
	return id, nil
}

// refresh uses the refresh token, adding the claims of the ID token that
// comes with the new tokens, if one does.
func (c *Client) refresh(ctx context.Context, m *metadata, refresh, subject string, claims map[string]any) (*oauth2.Token, error) {
	tok, err := c.oauth(m).TokenSource(ctx, &oauth2.Token{RefreshToken: refresh}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.Response == nil || re.Response.StatusCode < 500) {
			return nil, fmt.Errorf("%w: the provider refused the refresh token: %s", ErrGone, re.ErrorCode)
		}
		err = fmt.Errorf("%w: %v", ErrProvider, err)
		c.remember(err)
		return nil, err
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return tok, nil
	}
	idt, err := m.provider.Verifier(&oidc.Config{ClientID: c.cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: the refreshed ID token: %v", ErrGone, err)
	}
	if idt.Subject != subject {
		return nil, fmt.Errorf("%w: the refreshed ID token is of someone else", ErrGone)
	}
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGone, err)
	}
	return tok, nil
}

// remember keeps a failure to reach the provider, so that the checks of
// other accounts meanwhile do not each wait for it.
func (c *Client) remember(err error) {
	if errors.Is(err, ErrProvider) {
		c.mu.Lock()
		c.failedLocked(err)
		c.mu.Unlock()
	}
}

// addUserInfo adds to claims what the userinfo endpoint says of subject,
// when the provider has one: many put the profile and groups there only.
// Claims already there stay. errUnknown is the endpoint refusing the token.
func (c *Client) addUserInfo(ctx context.Context, m *metadata, tok *oauth2.Token, subject string, claims map[string]any) error {
	if m.provider.UserInfoEndpoint() == "" {
		return nil
	}
	st := &statusTransport{next: c.http.Transport}
	if st.next == nil {
		st.next = http.DefaultTransport
	}
	hc := *c.http
	hc.Transport = st
	ui, err := m.provider.UserInfo(oidc.ClientContext(ctx, &hc), oauth2.StaticTokenSource(tok))
	if err != nil {
		if code := st.status.Load(); code == http.StatusUnauthorized || code == http.StatusForbidden {
			return fmt.Errorf("%w: userinfo: %v", errUnknown, err)
		}
		return fmt.Errorf("%w: userinfo: %v", ErrProvider, err)
	}
	if ui.Subject != subject {
		return fmt.Errorf("%w: userinfo is of someone else", errUnknown)
	}
	more := map[string]any{}
	if err := ui.Claims(&more); err == nil {
		for k, v := range more {
			if _, ok := claims[k]; !ok {
				claims[k] = v
			}
		}
	}
	return nil
}

// statusTransport records the status of the last response, which go-oidc
// reports only as text.
type statusTransport struct {
	next   http.RoundTripper
	status atomic.Int64
}

func (t *statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if resp != nil {
		t.status.Store(int64(resp.StatusCode))
	}
	return resp, err
}

// identity reads who the claims say the person is.
func (c *Client) identity(issuer, subject string, claims map[string]any) *Identity {
	id := &Identity{Issuer: issuer, Subject: subject}
	id.Email, _ = claims["email"].(string)
	id.EmailVerified = isTrue(claims["email_verified"])
	id.Name, _ = claims["preferred_username"].(string)
	if id.Name == "" {
		id.Name, _, _ = strings.Cut(id.Email, "@")
	}
	id.Groups = stringsOf(claims[c.cfg.GroupsClaim])
	id.Admin = anyFold(id.Groups, c.cfg.AdminGroups)
	id.Teams = id.Groups
	if len(c.cfg.TeamGroups) > 0 {
		id.Teams = slices.DeleteFunc(slices.Clone(id.Groups), func(g string) bool { return !anyFold([]string{g}, c.cfg.TeamGroups) })
	}
	return id
}

// allowed says whether the person may sign in here: with AllowedDomains,
// their e-mail is verified (email_verified) and of one of the domains, or
// Google's hd claim names one; with AllowedGroups, they are in one.
func (c *Client) allowed(claims map[string]any, groups []string) bool {
	if len(c.cfg.AllowedDomains) > 0 {
		var domains []string
		if hd, _ := claims["hd"].(string); hd != "" {
			domains = append(domains, hd)
		}
		email, _ := claims["email"].(string)
		if at := strings.LastIndexByte(email, '@'); at >= 0 && isTrue(claims["email_verified"]) {
			domains = append(domains, email[at+1:])
		}
		if !anyFold(domains, c.cfg.AllowedDomains) {
			return false
		}
	}
	return len(c.cfg.AllowedGroups) == 0 || anyFold(groups, c.cfg.AllowedGroups)
}

// isTrue reads a boolean claim, which some providers (Cognito) send as a
// string.
func isTrue(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// anyFold says whether one of have is in want, without case.
func anyFold(have, want []string) bool {
	return slices.ContainsFunc(have, func(h string) bool {
		return slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(h, w) })
	})
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
