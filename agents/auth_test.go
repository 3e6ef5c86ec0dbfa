package agents

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/store"
)

// TestOAuthTokenNamesItsServers: an OAuth token works for the servers it
// was granted for; for any other, or when it is not valid, the agent is
// told 401 with where the server's resource metadata is.
func TestOAuthTokenNamesItsServers(t *testing.T) {
	ada := &store.User{ID: 1, Name: "ada"}
	d := New(Options{PublicURL: "https://rounds.example", VerifyOAuth: func(_ context.Context, token string) (*OAuthGrant, error) {
		if token != "rnda_good" {
			return nil, store.ErrNotFound
		}
		return &OAuthGrant{User: ada, ClientID: "https://client.example/meta.json", ClientName: "Example", Servers: []string{"github"}}, nil
	}})
	r := httptest.NewRequest(http.MethodPost, "/mcp/github", strings.NewReader(`{}`))
	r.Header.Set("Authorization", "Bearer rnda_good")
	who, err := d.authenticate(r.Context(), r, "github")
	if err != nil || who.User != ada || who.OAuthClient != "https://client.example/meta.json" || who.TokenID != 0 {
		t.Fatalf("the granted server: %+v, %v", who, err)
	}
	for _, c := range []struct{ path, token string }{
		{"/mcp/jira", "Bearer rnda_good"},
		{"/mcp/github", "Bearer rnda_bad"},
		{"/mcp/github", ""},
		{"/mcp/github", "Basic YWRhOnNlY3JldA=="},
	} {
		r := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(`{}`))
		if c.token != "" {
			r.Header.Set("Authorization", c.token)
		}
		w := httptest.NewRecorder()
		d.ServeHTTP(w, r)
		server := strings.TrimPrefix(c.path, "/mcp/")
		want := `Bearer resource_metadata="https://rounds.example/.well-known/oauth-protected-resource/mcp/` + server + `"`
		if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != want {
			t.Errorf("%s with %q: %d, WWW-Authenticate %q; want 401, %q", c.path, c.token, w.Code, w.Header().Get("WWW-Authenticate"), want)
		}
	}
}
