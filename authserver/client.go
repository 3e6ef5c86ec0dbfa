package authserver

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/store"
)

// Client ID metadata documents: read at most this much, this fast, and
// again after metadataFresh.
const (
	metadataMaxBytes = 64 << 10
	metadataTimeout  = 5 * time.Second
	metadataFresh    = 10 * time.Minute
)

// client is an OAuth client as op sees it. Every client is a native app
// in op's terms: https redirects, or http ones on loopback on any port
// (OAuth 2.1's native apps).
type client struct{ c *store.AgentClient }

func (c client) GetID() string                    { return c.c.ID }
func (c client) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c client) PostLogoutRedirectURIs() []string { return nil }
func (c client) ApplicationType() op.ApplicationType {
	return op.ApplicationTypeNative
}
func (c client) AuthMethod() oidc.AuthMethod {
	if c.c.SecretHash != nil {
		return oidc.AuthMethodPost
	}
	return oidc.AuthMethodNone
}
func (c client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}
func (c client) LoginURL(id string) string            { return PathConsent + "?id=" + url.QueryEscape(id) }
func (c client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c client) IDTokenLifetime() time.Duration       { return time.Hour }
func (c client) DevMode() bool                        { return false }
func (c client) IsScopeAllowed(scope string) bool     { return scope == Scope }
func (c client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c client) ClockSkew() time.Duration             { return 0 }
func (c client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// client returns a registered client, or one named by the URL of its
// metadata document, read again when the copy kept is old.
func (s *Server) client(ctx context.Context, id string) (op.Client, error) {
	c, err := s.o.Store.AgentClient(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if isMetadataURL(id) && (c == nil || time.Since(c.FetchedAt) > metadataFresh) {
		fresh, err := s.fetchMetadata(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := s.o.Store.SaveAgentClient(ctx, *fresh); err != nil {
			return nil, oidc.ErrServerError().WithParent(err)
		}
		c = fresh
	}
	if c == nil {
		return nil, errors.New("unknown client")
	}
	return client{c}, nil
}

// isMetadataURL says whether a client_id is the URL of a client ID
// metadata document: https, with a path, no fragment, no user.
func isMetadataURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Path != "" && u.Path != "/" &&
		u.Fragment == "" && u.User == nil
}

// metadataDoc is what Rounds reads of a client's metadata document (and of
// a registration request).
type metadataDoc struct {
	ClientID     string   `json:"client_id"`
	ClientName   string   `json:"client_name"`
	RedirectURIs []string `json:"redirect_uris"`
	AuthMethod   string   `json:"token_endpoint_auth_method"`
	GrantTypes   []string `json:"grant_types"`
}

// fetchMetadata reads a client's metadata document, whose client_id must
// be its own URL.
func (s *Server) fetchMetadata(ctx context.Context, id string) (*store.AgentClient, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.fetch.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client metadata document: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("client metadata document: status %d", resp.StatusCode)
	}
	var doc metadataDoc
	if err := json.NewDecoder(io.LimitReader(resp.Body, metadataMaxBytes)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("client metadata document: %w", err)
	}
	if doc.ClientID != id {
		return nil, errors.New("client metadata document: its client_id is not its URL")
	}
	if doc.AuthMethod != "" && doc.AuthMethod != "none" {
		return nil, errors.New("client metadata document: only public clients (token_endpoint_auth_method none)")
	}
	if err := checkRedirects(doc.RedirectURIs); err != nil {
		return nil, err
	}
	return &store.AgentClient{ID: id, Name: clip(doc.ClientName, 200), RedirectURIs: doc.RedirectURIs,
		MetadataURL: true, FetchedAt: time.Now(), CreatedAt: time.Now()}, nil
}

// checkRedirects accepts https redirect URIs, and http ones on a loopback
// address (OAuth 2.1's native apps); none with a fragment.
func checkRedirects(uris []string) error {
	if len(uris) == 0 || len(uris) > 20 {
		return errors.New("redirect_uris: give from 1 to 20")
	}
	for _, raw := range uris {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.Fragment != "" || len(raw) > 2000 {
			return fmt.Errorf("redirect_uris: %q is not a URL Rounds can send people back to", clip(raw, 100))
		}
		if u.Scheme == "https" {
			continue
		}
		if _, loopback := op.HTTPLoopbackOrLocalhost(raw); u.Scheme == "http" && loopback {
			continue
		}
		return fmt.Errorf("redirect_uris: %q must be https, or http on a loopback address", clip(raw, 100))
	}
	return nil
}

// metadataClient fetches metadata documents: no redirects, and no
// connection to a private address, whatever a name resolves to, but for
// loopback when allowLoopback.
func metadataClient(allowLoopback bool, roots *x509.CertPool) *http.Client {
	dialer := &net.Dialer{Timeout: metadataTimeout}
	dialer.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if engine.PublicIP(ap.Addr()) || (allowLoopback && ap.Addr().Unmap().IsLoopback()) {
			return nil
		}
		return errors.New("a client metadata document on a private address is refused")
	}
	tr := &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: metadataTimeout,
		ResponseHeaderTimeout: metadataTimeout, TLSClientConfig: &tls.Config{RootCAs: roots}}
	return &http.Client{Transport: tr, Timeout: metadataTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// register is dynamic client registration (RFC 7591): public clients, or
// confidential ones that ask for client_secret_post or _basic.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var doc metadataDoc
	if err := json.NewDecoder(io.LimitReader(r.Body, metadataMaxBytes)).Decode(&doc); err != nil {
		registerError(w, "invalid_client_metadata", "The body is not a JSON object.")
		return
	}
	if err := checkRedirects(doc.RedirectURIs); err != nil {
		registerError(w, "invalid_redirect_uri", err.Error())
		return
	}
	for _, g := range doc.GrantTypes {
		if g != string(oidc.GrantTypeCode) && g != string(oidc.GrantTypeRefreshToken) {
			registerError(w, "invalid_client_metadata", "grant_types: only authorization_code and refresh_token.")
			return
		}
	}
	c := store.AgentClient{ID: "rnd-" + newID(), Name: clip(doc.ClientName, 200), RedirectURIs: doc.RedirectURIs}
	resp := map[string]any{"client_id": c.ID, "client_id_issued_at": time.Now().Unix(),
		"redirect_uris": c.RedirectURIs, "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "token_endpoint_auth_method": "none"}
	switch doc.AuthMethod {
	case "", "none":
	case "client_secret_post", "client_secret_basic":
		secret := newSecret("rnds_")
		sum := sha256.Sum256([]byte(secret))
		c.SecretHash = sum[:]
		resp["client_secret"], resp["client_secret_expires_at"] = secret, 0
		resp["token_endpoint_auth_method"] = doc.AuthMethod
	default:
		registerError(w, "invalid_client_metadata", "token_endpoint_auth_method: none, client_secret_post or client_secret_basic.")
		return
	}
	if c.Name != "" {
		resp["client_name"] = c.Name
	}
	if err := s.o.Store.SaveAgentClient(r.Context(), c); err != nil {
		s.o.Log.Error("registering an OAuth client", "err", err)
		http.Error(w, "The client could not be registered.", http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusCreated, resp)
}

func registerError(w http.ResponseWriter, code, description string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// clip cuts untrusted text to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
