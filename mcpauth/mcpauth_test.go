package mcpauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-rounds/rounds/mcpauth"
	"github.com/mcp-rounds/rounds/mcptest"
)

// authorizeCode runs the authorization request as a person's browser
// would, and returns the code the authorization server sends back.
func authorizeCode(t *testing.T, c *mcpauth.Client, target *mcpauth.Target, reg mcpauth.Registration, verifier string) string {
	t.Helper()
	return authorize(t, c, target, reg, verifier).Get("code")
}

// authorize runs the authorization request as a person's browser would,
// and returns the query the authorization server sends the browser back
// to Rounds with.
func authorize(t *testing.T, c *mcpauth.Client, target *mcpauth.Target, reg mcpauth.Registration, verifier string) url.Values {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(c.AuthCodeURL(target, reg, mcpauth.Scope(target, ""), "state-1", verifier))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		t.Fatalf("authorization page answered %d without a redirect", resp.StatusCode)
	}
	if !strings.HasPrefix(loc.String(), c.RedirectURI()+"?") || loc.Query().Get("code") == "" {
		t.Fatalf("sent back to %s", loc)
	}
	return loc.Query()
}

// TestRootMetadataAndStrictRegistration: a server whose Protected Resource
// Metadata is only at the root well-known location, naming its origin as
// the resource (RFC 9728, 3.3), is found, and the origin is the resource
// parameter. Registration says which kind of application Rounds is, which
// the authorization server insists on. A code is good once: the second
// exchange gets a clear refusal.
func TestRootMetadataAndStrictRegistration(t *testing.T) {
	as := mcptest.NewAuthServer(t)
	var origin string
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-protected-resource" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": origin, "authorization_servers": []string{as.URL}})
	}))
	defer rs.Close()
	origin = rs.URL
	c := &mcpauth.Client{HTTP: mcpauth.NewHTTPClient(5 * time.Second), PublicURL: "http://127.0.0.1:1"}
	ctx := context.Background()
	target, err := c.Discover(ctx, rs.URL+"/mcp", "")
	if err != nil {
		t.Fatal(err)
	}
	if target.Resource != origin || target.AS.Issuer != as.URL {
		t.Fatalf("target = %s at %s, want %s at %s", target.Resource, target.AS.Issuer, origin, as.URL)
	}
	reg, err := c.Register(ctx, target, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reg.Dynamic || reg.ClientID == "" {
		t.Fatalf("registration = %+v, want a dynamic one", reg)
	}
	verifier := oauth2.GenerateVerifier()
	code := authorizeCode(t, c, target, *reg, verifier)
	toks, err := c.Exchange(ctx, target.AS.TokenEndpoint, *reg, code, verifier, target.Resource)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := as.Check(toks.Access, origin); !ok {
		t.Fatalf("the token is not good for %s", origin)
	}
	_, err = c.Exchange(ctx, target.AS.TokenEndpoint, *reg, code, verifier, target.Resource)
	var me *mcpauth.Error
	if !errors.As(err, &me) || !strings.Contains(me.Message, "invalid_grant") {
		t.Fatalf("a code used twice: %v, want the authorization server's invalid_grant said", err)
	}
}

// TestMetadataRedirectToAnotherOrigin: a server whose metadata sends
// Rounds to another origin is not followed there.
func TestMetadataRedirectToAnotherOrigin(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("followed a redirect to another origin: %s", r.URL)
	}))
	defer elsewhere.Close()
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	}))
	defer rs.Close()
	c := &mcpauth.Client{HTTP: mcpauth.NewHTTPClient(5 * time.Second), PublicURL: "http://127.0.0.1:1"}
	_, err := c.Discover(context.Background(), rs.URL+"/mcp", rs.URL+"/.well-known/oauth-protected-resource/mcp")
	if err == nil || !strings.Contains(err.Error(), "redirected to another origin") {
		t.Fatalf("err = %v, want a refused cross-origin redirect", err)
	}
}

// TestClientIDMetadataDocument: an authorization server that takes Client
// ID Metadata Documents gets Rounds' URL as client_id, fetches the
// document from PUBLIC_URL and lets the flow through; no registration.
func TestClientIDMetadataDocument(t *testing.T) {
	as := mcptest.NewAuthServer(t)
	as.Set(func(as *mcptest.AuthServer) { as.CIMD = true })
	mux := http.NewServeMux()
	public := httptest.NewServer(mux)
	defer public.Close()
	c := &mcpauth.Client{HTTP: mcpauth.NewHTTPClient(5 * time.Second), PublicURL: public.URL}
	mux.HandleFunc("GET /oauth/client-metadata.json", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(c.ClientMetadata())
	})
	mcpURL := mcptest.Protect(t, as, http.NotFoundHandler(), "mcp:tools")
	ctx := context.Background()
	target, err := c.Discover(ctx, mcpURL, "")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := c.Register(ctx, target, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reg.ClientID != public.URL+"/oauth/client-metadata.json" || reg.Dynamic {
		t.Fatalf("registration = %+v, want the document's URL", reg)
	}
	verifier := oauth2.GenerateVerifier()
	code := authorizeCode(t, c, target, *reg, verifier)
	if _, err := c.Exchange(ctx, target.AS.TokenEndpoint, *reg, code, verifier, target.Resource); err != nil {
		t.Fatal(err)
	}
	doc := as.Documents[reg.ClientID]
	if doc == nil || doc["token_endpoint_auth_method"] != "none" || doc["application_type"] != "native" {
		t.Fatalf("document the authorization server read: %v", doc)
	}
}

// TestLegacyDiscovery: a server of revision 2025-03-26 publishes no
// resource metadata; its origin is its authorization server, found by its
// RFC 8414 metadata or, without any, at the default endpoints. Either way
// the flow goes through and the token is good for the server.
func TestLegacyDiscovery(t *testing.T) {
	for _, silent := range []bool{false, true} {
		as := mcptest.NewAuthServer(t)
		as.Set(func(as *mcptest.AuthServer) { as.Silent = silent })
		c := &mcpauth.Client{HTTP: mcpauth.NewHTTPClient(5 * time.Second), PublicURL: "http://127.0.0.1:1"}
		ctx := context.Background()
		target, err := c.Discover(ctx, as.URL+"/mcp", "")
		if err != nil {
			t.Fatalf("silent=%v: %v", silent, err)
		}
		if target.Resource != as.URL+"/mcp" || target.AS.Issuer != as.URL || target.AS.TokenEndpoint != as.URL+"/token" ||
			target.AS.AuthorizationResponseIssParameterSupported == silent {
			t.Fatalf("silent=%v: target %s at %+v", silent, target.Resource, target.AS)
		}
		reg, err := c.Register(ctx, target, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		verifier := oauth2.GenerateVerifier()
		code := authorizeCode(t, c, target, *reg, verifier)
		toks, err := c.Exchange(ctx, target.AS.TokenEndpoint, *reg, code, verifier, target.Resource)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := as.Check(toks.Access, as.URL+"/mcp"); !ok {
			t.Fatalf("silent=%v: the token is not good for the server", silent)
		}
	}
}
