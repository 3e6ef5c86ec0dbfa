package journeys

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/oauth2"

	"github.com/mcp-rounds/rounds/sso/ssotest"
)

// TestOAuthAgentSignsOnWithProvider: a person who signs in to Rounds
// through single sign-on connects an agent too. The agent sends them to
// Rounds' /authorize; not signed in, they go through the provider and come
// back to the consent page, allow, and the agent's token is theirs.
func TestOAuthAgentSignsOnWithProvider(t *testing.T) {
	t.Parallel()
	addr := freeLoopback(t)
	public := "http://" + addr
	ada := ssotest.Person{ID: "sub-ada", Username: "ada", Password: "ada's password", Email: "ada@example.com"}
	provider := ssotest.Start(t, public+"/auth/oidc/callback", public+"/login", ada)
	inst := startInstance(t, newDatabase(t), map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil),
		"PUBLIC_URL": public, "LISTEN_ADDR": addr, "OIDC_ISSUER": provider.Issuer,
		"OIDC_CLIENT_ID": provider.ClientID, "OIDC_CLIENT_SECRET": provider.ClientSecret}, nil)
	cb := newAgentCallback(t)
	_, reg := register(t, inst.URL, map[string]any{"client_name": "Sign-on agent", "redirect_uris": []string{cb.redirectURI()}})
	agent := newOAuthAgent(inst.URL, reg["client_id"].(string), cb)
	verifier := oauth2.GenerateVerifier()
	authURL, _ := url.Parse(agent.conf.AuthCodeURL("st-sso", oauth2.S256ChallengeOption(verifier), resourceOf(inst.URL, "demo")))

	jar, _ := cookiejar.New(nil)
	b := &agentBrowser{t: t, base: inst.URL, http: &http.Client{Jar: jar}}
	resp := ssotest.LogIn(t, b.http, inst.URL+"/auth/oidc?next="+url.QueryEscape(authURL.RequestURI()), ada)
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	if err != nil || resp.Request.URL.Path != "/oauth/consent" {
		t.Fatalf("after signing on, the person is at %s (%d), want the consent page", resp.Request.URL, resp.StatusCode)
	}
	if got := doc.Find(`[data-testid=consent-client-name]`).Text(); got != "Sign-on agent" {
		t.Errorf("the consent page names %q", got)
	}
	b.authorize(authURL.String(), "", "", "allow") // signed in now: straight to the consent page
	tok, err := agent.conf.Exchange(context.Background(), cb.query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	g, err := inst.AuthServer().Verify(context.Background(), tok.AccessToken)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if g.User.Name != "ada" || len(g.Servers) != 1 || g.Servers[0] != "demo" {
		t.Errorf("the token is %s's for %v, want ada's for demo", g.User.Name, g.Servers)
	}
}
