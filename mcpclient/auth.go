package mcpclient

import (
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// AuthRequiredError means the server wants an OAuth access token it was not
// given (401), or one with more scopes (403 insufficient_scope). Challenge
// is what its WWW-Authenticate header said.
type AuthRequiredError struct {
	Status int
	// ResourceMetadata is the Protected Resource Metadata URL, when given.
	ResourceMetadata string
	// Scope is the space-separated scopes the server asks for, when given.
	Scope string
	// Code is the challenge's error (invalid_token, insufficient_scope…).
	Code string
}

func (e *AuthRequiredError) Error() string {
	if e.Status == http.StatusForbidden {
		return "the server needs more permissions than it was given (" + e.Scope + ")"
	}
	return "the server needs you to sign in first"
}

// authBox watches one operation's HTTP exchanges: it adds the bearer token
// to requests for the server's own origin only, and keeps the first
// authorization challenge the server answers with.
type authBox struct {
	base   http.RoundTripper
	token  string
	origin string
	mu     sync.Mutex
	err    *AuthRequiredError
}

func (b *authBox) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.token != "" && origin(req.URL) == b.origin {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+b.token)
	} else if b.token != "" {
		// Never to another origin, even when a redirect leads there.
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	resp, err := b.base.RoundTrip(req)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	var found *AuthRequiredError
	for _, ch := range challenges {
		if !strings.EqualFold(ch.Scheme, "bearer") {
			continue
		}
		found = &AuthRequiredError{Status: resp.StatusCode, ResourceMetadata: ch.Params["resource_metadata"],
			Scope: ch.Params["scope"], Code: ch.Params["error"]}
		break
	}
	if found == nil && resp.StatusCode == http.StatusUnauthorized {
		// A 401 without a Bearer challenge: still a request for sign-in;
		// the well-known locations say where.
		found = &AuthRequiredError{Status: resp.StatusCode}
	}
	if found != nil && (resp.StatusCode == http.StatusUnauthorized || found.Code == "insufficient_scope") {
		b.mu.Lock()
		if b.err == nil {
			b.err = found
		}
		b.mu.Unlock()
	}
	return resp, nil
}

// challenge is the recorded challenge, if any.
func (b *authBox) challenge() *AuthRequiredError {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// wrap returns the recorded challenge in place of the transport's error.
func (b *authBox) wrap(err error) error {
	if err == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	return err
}

// newAuthBox starts watching an operation on srv.
func newAuthBox(srv Server) *authBox {
	b := &authBox{token: srv.Token}
	if u, err := url.Parse(srv.URL); err == nil {
		b.origin = origin(u)
	}
	return b
}
