// Package mcpauth is the client side of MCP authorization (OAuth 2.1): it
// finds a server's authorization server, registers with it, builds the
// authorization request, checks the response and trades the code for
// tokens. It keeps no state: every step's state lives in Postgres (see
// store/oauth.go), so a flow started on one instance ends on any other.
// Discovery and registration use the go-sdk's oauthex; the requests are
// golang.org/x/oauth2's.
package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Client talks to protected resources' metadata and authorization servers.
type Client struct {
	// HTTP makes every request; bounded by its own timeout.
	HTTP *http.Client
	// PublicURL is where people reach Rounds; the redirect URI and the
	// Client ID Metadata Document live under it.
	PublicURL string
}

// RedirectURI is where authorization servers send people back.
func (c *Client) RedirectURI() string { return strings.TrimRight(c.PublicURL, "/") + "/oauth/callback" }

// ClientIDMetadataURL is the URL of Rounds' Client ID Metadata Document,
// which is also its client_id at authorization servers that accept one.
func (c *Client) ClientIDMetadataURL() string {
	return strings.TrimRight(c.PublicURL, "/") + "/oauth/client-metadata.json"
}

// ClientMetadata is Rounds' Client ID Metadata Document.
func (c *Client) ClientMetadata() map[string]any {
	return map[string]any{
		"client_id":                  c.ClientIDMetadataURL(),
		"client_name":                "Rounds",
		"client_uri":                 strings.TrimRight(c.PublicURL, "/") + "/",
		"redirect_uris":              []string{c.RedirectURI()},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"application_type":           c.applicationType(),
	}
}

// Target is what discovery found out about a protected server.
type Target struct {
	// Resource is the server's canonical URI: the resource parameter.
	Resource string
	// ScopesSupported is the Protected Resource Metadata's list.
	ScopesSupported []string
	AS              *oauthex.AuthServerMeta
}

// Error is a step of the flow going wrong, said for a person.
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

func fail(format string, args ...any) error { return &Error{Message: fmt.Sprintf(format, args...)} }

// noPKCE refuses an authorization server without PKCE S256.
func noPKCE(issuer string) error {
	return fail("The authorization server %s does not offer PKCE with S256, which MCP requires.", issuer)
}

// Canonical returns a server URL as the resource parameter names it: no
// fragment, lower-case scheme and host.
func Canonical(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return serverURL
	}
	u.Fragment, u.RawFragment = "", ""
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return u.String()
}

// Discover finds the server's Protected Resource Metadata — at
// resourceMetadata (from the 401's WWW-Authenticate) or else the well-known
// locations, path first — and its authorization server's metadata, trying
// RFC 8414 and OpenID Connect discovery in the spec's order.
func (c *Client) Discover(ctx context.Context, serverURL, resourceMetadata string) (*Target, error) {
	resource := Canonical(serverURL)
	u, err := url.Parse(resource)
	if err != nil {
		return nil, fail("The server's address cannot be read.")
	}
	// Each place names the resource it must describe (RFC 9728, 3.3): the
	// server itself, or at the root well-known location its origin, which
	// then stands for every server there.
	type candidate struct{ url, resource string }
	candidates := []candidate{{resourceMetadata, resource}}
	if resourceMetadata == "" {
		origin := u.Scheme + "://" + u.Host
		candidates = nil
		if p := strings.TrimRight(u.EscapedPath(), "/"); p != "" {
			candidates = append(candidates, candidate{origin + "/.well-known/oauth-protected-resource" + p, resource})
		}
		candidates = append(candidates, candidate{origin + "/.well-known/oauth-protected-resource", origin})
	}
	var prm *oauthex.ProtectedResourceMetadata
	var lastErr error
	for _, cand := range candidates {
		if prm, lastErr = oauthex.GetProtectedResourceMetadata(ctx, cand.url, cand.resource, c.HTTP); lastErr == nil {
			break
		}
	}
	if prm == nil && resourceMetadata == "" {
		// No metadata anywhere: a server of revision 2025-03-26, whose
		// origin is its authorization server.
		if t, err := c.legacy(ctx, u, resource); err == nil {
			return t, nil
		}
	}
	if prm == nil {
		return nil, fail("The server's sign-in details (its protected resource metadata) could not be read: %v", lastErr)
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, fail("The server names no authorization server to sign in at.")
	}
	issuer := prm.AuthorizationServers[0]
	as, err := c.authServer(ctx, issuer)
	if err != nil {
		return nil, err
	}
	return &Target{Resource: prm.Resource, ScopesSupported: prm.ScopesSupported, AS: as}, nil
}

// legacy is discovery as revision 2025-03-26 had it: the server's origin
// is the authorization server, its RFC 8414 metadata at the origin's
// well-known location, or without any, the default endpoints /authorize,
// /token and /register there. Everything stays on the server's own origin.
func (c *Client) legacy(ctx context.Context, server *url.URL, resource string) (*Target, error) {
	origin := server.Scheme + "://" + server.Host
	asm, err := oauthex.GetAuthServerMeta(ctx, origin+"/.well-known/oauth-authorization-server", origin, c.HTTP)
	if err != nil {
		return nil, err
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: origin, AuthorizationEndpoint: origin + "/authorize",
			TokenEndpoint: origin + "/token", RegistrationEndpoint: origin + "/register",
			CodeChallengeMethodsSupported: []string{"S256"}}
	} else if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, noPKCE(origin)
	}
	return &Target{Resource: resource, AS: asm}, nil
}

// authServer reads an authorization server's metadata from the well-known
// locations, in the order the spec gives for issuers with and without a
// path.
func (c *Client) authServer(ctx context.Context, issuer string) (*oauthex.AuthServerMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fail("The authorization server's address %q cannot be read.", issuer)
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimRight(u.EscapedPath(), "/")
	urls := []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	if path != "" {
		urls = []string{
			origin + "/.well-known/oauth-authorization-server" + path,
			origin + "/.well-known/openid-configuration" + path,
			origin + path + "/.well-known/openid-configuration",
		}
	}
	var errs []error
	for _, m := range urls {
		asm, err := oauthex.GetAuthServerMeta(ctx, m, issuer, c.HTTP)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if asm != nil {
			if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
				return nil, noPKCE(issuer)
			}
			return asm, nil
		}
	}
	if len(errs) > 0 {
		return nil, fail("The authorization server %s could not be asked how to sign in: %v", issuer, errors.Join(errs...))
	}
	return nil, fail("The authorization server %s publishes no metadata (neither OAuth nor OpenID Connect discovery).", issuer)
}

// Scope picks the scopes to ask for: those the server challenged with
// (with any asked before, for a step-up), else everything its metadata
// lists, plus offline_access where the authorization server offers it, so
// the connection can be refreshed.
func Scope(t *Target, challenged string) string {
	scopes := strings.Fields(challenged)
	if len(scopes) == 0 {
		scopes = slices.Clone(t.ScopesSupported)
	}
	if slices.Contains(t.AS.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	return strings.Join(scopes, " ")
}

// Registration is a client at an authorization server.
type Registration struct {
	ClientID, ClientSecret string
	// AuthMethod is none, client_secret_basic or client_secret_post.
	AuthMethod string
	// Dynamic is set for a client registered just now, to be kept.
	Dynamic bool
}

// Register gets a client id in the spec's order of preference: the one an
// admin pre-registered, then Rounds' Client ID Metadata Document where the
// authorization server accepts one (and PUBLIC_URL is https, or loopback),
// then dynamic registration. known is a dynamic registration kept from
// before, used instead of registering again.
func (c *Client) Register(ctx context.Context, t *Target, preregistered, known *Registration) (*Registration, error) {
	if preregistered != nil {
		return preregistered, nil
	}
	if t.AS.ClientIDMetadataDocumentSupported && c.cimdUsable() {
		return &Registration{ClientID: c.ClientIDMetadataURL(), AuthMethod: "none"}, nil
	}
	if known != nil {
		return known, nil
	}
	if t.AS.RegistrationEndpoint == "" {
		return nil, fail("The authorization server %s takes neither Rounds' client metadata document nor dynamic registration: an administrator must register Rounds there and enter its client id on the server's admin page.", t.AS.Issuer)
	}
	method := "none"
	if slices.Contains(t.AS.TokenEndpointAuthMethodsSupported, "client_secret_basic") {
		method = "client_secret_basic"
	}
	resp, err := oauthex.RegisterClient(ctx, t.AS.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{c.RedirectURI()}, TokenEndpointAuthMethod: method,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		ClientName: "Rounds", ClientURI: strings.TrimRight(c.PublicURL, "/") + "/",
		ApplicationType: c.applicationType(),
	}, c.HTTP)
	if err != nil {
		return nil, fail("Registering Rounds at the authorization server %s failed: %v", t.AS.Issuer, err)
	}
	if resp.TokenEndpointAuthMethod != "" {
		method = resp.TokenEndpointAuthMethod
	}
	if resp.ClientSecret == "" {
		method = "none"
	}
	return &Registration{ClientID: resp.ClientID, ClientSecret: resp.ClientSecret, AuthMethod: method, Dynamic: true}, nil
}

// applicationType is what Rounds registers as: a web application, which
// it is, but native when PUBLIC_URL is plain http on loopback (a developer's
// machine), since authorization servers refuse such redirects for web
// clients (OpenID Connect Dynamic Client Registration, application_type).
func (c *Client) applicationType() string {
	u, err := url.Parse(c.PublicURL)
	if err == nil && u.Scheme == "http" && isLoopback(u.Hostname()) {
		return "native"
	}
	return "web"
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

func (c *Client) cimdUsable() bool {
	u, err := url.Parse(c.PublicURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	return u.Scheme == "https" || isLoopback(host)
}

func (c *Client) config(tokenURL, authURL string, r Registration, scope string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if r.AuthMethod == "client_secret_basic" {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{
		ClientID: r.ClientID, ClientSecret: r.ClientSecret, RedirectURL: c.RedirectURI(), Scopes: strings.Fields(scope),
		Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: style},
	}
}

// AuthCodeURL is the authorization request: PKCE S256 from verifier, the
// resource parameter, and the scopes.
func (c *Client) AuthCodeURL(t *Target, r Registration, scope, state, verifier string) string {
	return c.config(t.AS.TokenEndpoint, t.AS.AuthorizationEndpoint, r, scope).AuthCodeURL(state,
		oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", t.Resource))
}

// CheckIssuer applies RFC 9207 as the spec's table says: a present iss must
// equal the recorded issuer exactly; an absent one is refused when the
// authorization server said it sends one.
func CheckIssuer(query url.Values, issuer string, supported bool) error {
	iss, present := query["iss"]
	switch {
	case present && (len(iss) != 1 || iss[0] != issuer):
		return fail("The sign-in came back from the wrong authorization server (iss %q, expected %q), so it was refused.", strings.Join(iss, ","), issuer)
	case !present && supported:
		return fail("The sign-in came back without naming its authorization server (iss), which %s promised to send, so it was refused.", issuer)
	}
	return nil
}

// Tokens is what a token request brings.
type Tokens struct {
	Access, Refresh string
	Expires         *time.Time
	Scope           string
}

func tokens(t *oauth2.Token) *Tokens {
	out := &Tokens{Access: t.AccessToken, Refresh: t.RefreshToken}
	if !t.Expiry.IsZero() {
		out.Expires = &t.Expiry
	}
	if s, ok := t.Extra("scope").(string); ok {
		out.Scope = s
	}
	return out
}

// Exchange trades an authorization code for tokens, with the PKCE
// verifier and the resource parameter.
func (c *Client) Exchange(ctx context.Context, tokenURL string, r Registration, code, verifier, resource string) (*Tokens, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, c.HTTP)
	tok, err := c.config(tokenURL, "", r, "").Exchange(ctx, code,
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		return nil, describe("Trading the sign-in for a token failed", err)
	}
	return tokens(tok), nil
}

// Refresh renews tokens with a refresh token, naming the resource as the
// spec asks of every token request. (oauth2's own refresh cannot add it.)
func (c *Client) Refresh(ctx context.Context, tokenURL string, r Registration, refresh, resource string) (*Tokens, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "resource": {resource}}
	if r.AuthMethod != "client_secret_basic" {
		form.Set("client_id", r.ClientID)
		if r.ClientSecret != "" {
			form.Set("client_secret", r.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if r.AuthMethod == "client_secret_basic" {
		req.SetBasicAuth(url.QueryEscape(r.ClientID), url.QueryEscape(r.ClientSecret))
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fail("The authorization server could not be reached to renew the connection: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
		Scope        string `json:"scope"`
		Error        string `json:"error"`
	}
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusOK || out.AccessToken == "" {
		return nil, fail("The authorization server refused to renew the connection (%d %s).", resp.StatusCode, out.Error)
	}
	t := &Tokens{Access: out.AccessToken, Refresh: out.RefreshToken, Scope: out.Scope}
	if out.ExpiresIn > 0 {
		exp := time.Now().Add(time.Duration(out.ExpiresIn) * time.Second)
		t.Expires = &exp
	}
	return t, nil
}

func describe(what string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fail("%s: the authorization server answered %s.", what, re.ErrorCode)
		}
		return fail("%s: the authorization server answered %d.", what, re.Response.StatusCode)
	}
	return fail("%s: the authorization server could not be reached (%v).", what, err)
}

// NewHTTPClient returns the client for authorization requests: bounded by
// timeout, and refusing to follow a redirect to another origin, so no
// code, verifier or secret goes anywhere but where it was meant for.
func NewHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			from := via[0].URL
			if !strings.EqualFold(req.URL.Scheme+"://"+req.URL.Host, from.Scheme+"://"+from.Host) {
				return fail("%s redirected to another origin (%s); Rounds does not follow it.", from.Host, req.URL.Host)
			}
			if len(via) >= 5 {
				return fail("%s redirected too many times.", from.Host)
			}
			return nil
		},
	}
}
