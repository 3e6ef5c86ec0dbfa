// Package authserver is Rounds' OAuth 2.1 authorization server for agents:
// an MCP client that only does OAuth signs a person in through the browser
// and gets a token for some of the servers Rounds serves at /mcp/{server}.
//
// The protocol work (authorization and token endpoints, PKCE, client
// authentication, refresh, revocation, discovery) is done by the
// zitadel/oidc op package, a maintained and OpenID-certified server
// library, rather than by token code of our own; this package gives it
// storage in Postgres and adds what MCP asks of an authorization server:
// resource indicators (RFC 8707) naming servers, dynamic client
// registration (RFC 7591), client ID metadata documents, protected
// resource metadata (RFC 9728), and a consent page (package handlers).
package authserver

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/mcp-rounds/rounds/store"
)

// Token and code prefixes. API tokens are rnd_; OAuth access tokens rnda_.
const (
	AccessPrefix  = "rnda_"
	refreshPrefix = "rndr_"
	codePrefix    = "rndc_"
)

// Scope is the one scope Rounds knows; a request that names none gets it.
// What a token may reach is said by its resources (servers), not scopes.
const Scope = "mcp"

// Paths the server answers; handlers/routes.go mounts each.
const (
	PathAuthorize        = "/authorize"
	PathAuthorizeDone    = "/authorize/callback"
	PathToken            = "/oauth/token"
	PathRevoke           = "/oauth/revoke"
	PathRegister         = "/oauth/register"
	PathKeys             = "/oauth/keys"
	PathMetadata         = "/.well-known/oauth-authorization-server"
	PathOpenIDMetadata   = "/.well-known/openid-configuration"
	PathResourceMetadata = "/.well-known/oauth-protected-resource/mcp/"
	// PathConsent is the consent page (handlers), where op sends the person.
	PathConsent = "/oauth/consent"
)

// Options configure the server.
type Options struct {
	Store *store.Store
	// PublicURL is Rounds' public URL: the issuer, and the base of every
	// resource (PublicURL/mcp/{server}).
	PublicURL string
	// SigningSeed (32 bytes, kept in Postgres like the app's other secrets)
	// makes the Ed25519 key that signs ID tokens; every instance derives the
	// same key.
	SigningSeed []byte
	// InstanceID names this instance in audit entries.
	InstanceID string
	// AccessTTL and RefreshTTL are the lifetimes of tokens (1 hour and 30
	// days when zero).
	AccessTTL, RefreshTTL time.Duration
	// MetadataAllowLoopback lets client ID metadata documents be fetched
	// from loopback addresses (tests); MetadataRootCAs trusts more roots.
	MetadataAllowLoopback bool
	MetadataRootCAs       *x509.CertPool
	Log                   *slog.Logger
}

// Server is the authorization server.
type Server struct {
	o        Options
	issuer   string
	key      ed25519.PrivateKey
	provider *op.Provider
	fetch    *http.Client
	mux      *http.ServeMux
}

// New builds the server.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.PublicURL == "" || len(o.SigningSeed) != ed25519.SeedSize {
		return nil, errors.New("authserver: store, public URL and a 32-byte signing seed are required")
	}
	if o.AccessTTL == 0 {
		o.AccessTTL = time.Hour
	}
	if o.RefreshTTL == 0 {
		o.RefreshTTL = 30 * 24 * time.Hour
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &Server{o: o, issuer: strings.TrimRight(o.PublicURL, "/"), key: ed25519.NewKeyFromSeed(o.SigningSeed)}
	s.fetch = metadataClient(o.MetadataAllowLoopback, o.MetadataRootCAs)
	opts := []op.Option{
		op.WithCrypto(tokenCrypto{}),
		op.WithCustomAuthEndpoint(op.NewEndpoint(strings.TrimPrefix(PathAuthorize, "/"))),
		op.WithCustomTokenEndpoint(op.NewEndpoint(strings.TrimPrefix(PathToken, "/"))),
		op.WithCustomRevocationEndpoint(op.NewEndpoint(strings.TrimPrefix(PathRevoke, "/"))),
		op.WithCustomKeysEndpoint(op.NewEndpoint(strings.TrimPrefix(PathKeys, "/"))),
	}
	if strings.HasPrefix(s.issuer, "http://") {
		opts = append(opts, op.WithAllowInsecure())
	}
	cfg := &op.Config{
		CodeMethodS256:        true,
		AuthMethodPost:        true,
		GrantTypeRefreshToken: true,
		SupportedScopes:       []string{Scope, "openid", "offline_access"},
	}
	p, err := op.NewProvider(cfg, &storage{s: s}, op.StaticIssuer(s.issuer), opts...)
	if err != nil {
		return nil, fmt.Errorf("authserver: %w", err)
	}
	s.provider = p
	s.mux = http.NewServeMux()
	flow := s.withResources(p)
	for _, path := range []string{PathAuthorize, PathAuthorizeDone, PathToken, PathRevoke, PathKeys} {
		s.mux.Handle(path, flow)
	}
	s.mux.HandleFunc("GET "+PathMetadata, s.metadata)
	s.mux.HandleFunc("GET "+PathOpenIDMetadata, s.metadata)
	s.mux.HandleFunc("GET "+PathResourceMetadata+"{server}", s.resourceMetadata)
	s.mux.HandleFunc("POST "+PathRegister, s.register)
	return s, nil
}

// ServeHTTP answers the server's paths (see the Path constants).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path == PathRegister || strings.HasPrefix(r.URL.Path, "/.well-known/") {
		// Agents in a browser read the metadata and register from another
		// origin; no cookie is involved (op's endpoints have CORS of their own).
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization, Mcp-Protocol-Version")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// Issuer is the issuer identifier: Rounds' public URL.
func (s *Server) Issuer() string { return s.issuer }

// ResourceMetadataURL is the address of the protected resource metadata of
// a server, for the front door's WWW-Authenticate header.
func (s *Server) ResourceMetadataURL(server string) string {
	return s.issuer + PathResourceMetadata + pathEscape(server)
}

// Resource is the resource identifier (RFC 8707) of a server.
func (s *Server) Resource(server string) string {
	return s.issuer + "/mcp/" + pathEscape(server)
}

// contextKey carries the resource parameters of the request being served.
type contextKey struct{}

// resourceParams are the request's resource parameters (RFC 8707), which
// op's requests do not carry.
type resourceParams []string

// withResources reads the resource parameters of an authorization or
// token request into the context, for the storage to read, and gives an
// authorization request that names no scope Rounds' one scope.
func (s *Server) withResources(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The request's form could not be read.", http.StatusBadRequest)
			return
		}
		if r.URL.Path == PathAuthorize && r.Form.Get("scope") == "" {
			q := r.URL.Query()
			q.Set("scope", Scope)
			r.URL.RawQuery = q.Encode()
			r.Form.Set("scope", Scope)
		}
		ctx := context.WithValue(r.Context(), contextKey{}, resourceParams(r.Form["resource"]))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func resourcesFrom(ctx context.Context) []string {
	v, _ := ctx.Value(contextKey{}).(resourceParams)
	return v
}
