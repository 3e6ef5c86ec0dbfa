package authserver

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

const issuer = "https://rounds.example"

func newServer(t *testing.T, allowLoopback bool, roots *x509.CertPool) (*Server, *store.Store) {
	t.Helper()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"github", "jira"} {
		if _, err := st.UpsertServer(context.Background(), name, "http://127.0.0.1:1/mcp"); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(Options{Store: st, PublicURL: issuer, SigningSeed: make([]byte, 32),
		MetadataAllowLoopback: allowLoopback, MetadataRootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// TestResources: resource parameters name servers of this Rounds by
// PUBLIC_URL/mcp/{server}; anything else is invalid_target.
func TestResources(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, false, nil)
	ctx := context.Background()
	got, err := s.servers(ctx, []string{issuer + "/mcp/jira", issuer + "/mcp/github", issuer + "/mcp/github/"})
	if err != nil || !slices.Equal(got, []string{"github", "jira"}) {
		t.Fatalf("servers = %v, %v; want [github, jira]", got, err)
	}
	for _, bad := range []string{"https://other.example/mcp/github", issuer + "/mcp/nosuch", issuer + "/mcp/",
		issuer + "/api/v1/servers/github", issuer + "/mcp/github?x=1", "github"} {
		_, err := s.servers(ctx, []string{issuer + "/mcp/github", bad})
		var oe *oidc.Error
		if !errors.As(err, &oe) || oe.ErrorType != "invalid_target" {
			t.Errorf("resource %q: %v, want invalid_target", bad, err)
		}
	}
}

// TestClientMetadataDocumentRefused: a metadata document is refused from
// a loopback address (unless allowed), through a redirect, when too big,
// when its client_id is not its URL, or with a redirect URI that is
// neither https nor loopback.
func TestClientMetadataDocumentRefused(t *testing.T) {
	t.Parallel()
	var base string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc := map[string]any{"client_id": base + r.URL.Path, "client_name": "Doc",
			"redirect_uris": []string{"http://127.0.0.1/cb"}}
		switch r.URL.Path {
		case "/moved.json":
			http.Redirect(w, r, "/ok.json", http.StatusFound)
			return
		case "/big.json":
			doc["client_name"] = strings.Repeat("x", metadataMaxBytes)
		case "/other.json":
			doc["client_id"] = base + "/ok.json"
		case "/plain-http.json":
			doc["redirect_uris"] = []string{"http://agent.example/cb"}
		}
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(docs.Close)
	base = docs.URL
	roots := x509.NewCertPool()
	roots.AddCert(docs.Certificate())
	ctx := context.Background()

	closed, _ := newServer(t, false, roots)
	if _, err := closed.client(ctx, base+"/ok.json"); err == nil || !strings.Contains(err.Error(), "private address") {
		t.Errorf("a document on loopback without leave: %v, want refused", err)
	}
	s, st := newServer(t, true, roots)
	c, err := s.client(ctx, base+"/ok.json")
	if err != nil || c.GetID() != base+"/ok.json" || !slices.Equal(c.RedirectURIs(), []string{"http://127.0.0.1/cb"}) {
		t.Fatalf("a good document: %v, %v", c, err)
	}
	if kept, err := st.AgentClient(ctx, base+"/ok.json"); err != nil || kept.Name != "Doc" || !kept.MetadataURL {
		t.Errorf("the document is not kept: %v, %v", kept, err)
	}
	for _, path := range []string{"/moved.json", "/big.json", "/other.json", "/plain-http.json"} {
		if _, err := s.client(ctx, base+path); err == nil {
			t.Errorf("%s: accepted", path)
		}
	}
	if _, err := s.client(ctx, "https://127.0.0.1/"); err == nil {
		t.Error("a client_id URL without a path was taken for a metadata document")
	}
}

// TestVerifyRefusesDisabledPerson: a token stops working when its person
// is disabled, and works again only if they are enabled again.
func TestVerifyRefusesDisabledPerson(t *testing.T) {
	t.Parallel()
	s, st := newServer(t, false, nil)
	ctx := context.Background()
	u, err := st.CreateUser(ctx, "ada", "a long enough password", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveAgentClient(ctx, store.AgentClient{ID: "rnd-x", Name: "X", RedirectURIs: []string{"https://x.example/cb"}}); err != nil {
		t.Fatal(err)
	}
	req := store.AgentAuthRequest{ID: newID(), ClientID: "rnd-x", RedirectURI: "https://x.example/cb", CodeChallenge: "c",
		Resources: []string{"github"}, ExpiresAt: time.Now().Add(time.Minute)}
	if err := st.CreateAgentAuthRequest(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := st.ApproveAgentAuthRequest(ctx, req.ID, u.ID, store.AuditEntry{Actor: "ada", Action: "oauth.consent"}); err != nil {
		t.Fatal(err)
	}
	stored, err := st.AgentAuthRequest(ctx, req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetAgentAuthCode(ctx, req.ID, hash("code")); err != nil {
		t.Fatal(err)
	}
	access := newSecret(AccessPrefix)
	if err := st.CreateAgentTokens(ctx, store.AgentTokens{GrantID: *stored.GrantID, Servers: []string{"github"},
		AccessHash: hash(access), AccessExpires: time.Now().Add(time.Hour), Consumes: req.ID}); err != nil {
		t.Fatal(err)
	}
	if g, err := s.Verify(ctx, access); err != nil || g.User.Name != "ada" || !slices.Equal(g.Servers, []string{"github"}) {
		t.Fatalf("verify: %v, %v", g, err)
	}
	if err := st.SetUserDisabled(ctx, "ada", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, access); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a disabled person's token: %v, want not found", err)
	}
	if _, err := s.Verify(ctx, "rnd_"+access[5:]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an API-token-shaped string: %v, want not found", err)
	}
}
