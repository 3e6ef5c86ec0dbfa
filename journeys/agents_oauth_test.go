package journeys

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// TestAgentSignsInWithOAuth: an agent that registered itself signs a
// person in through the browser (a password account), with PKCE S256, for
// the resource PUBLIC_URL/mcp/demo, and calls a tool through the front
// door of the other instance with its rnda_ token. The same token at
// another server is refused with the pointer to that server's protected
// resource metadata, which names Rounds; the call names the OAuth client;
// once the person disconnects the agent on the account page, its token
// is refused on both instances.
func TestAgentSignsInWithOAuth(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	const public = "https://rounds.example"
	demo := demoServer(t, nil)
	env := map[string]string{"MCP_SERVERS": "demo=" + demo + ",other=" + demo, "PUBLIC_URL": public}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)

	cb := newAgentCallback(t)
	status, reg := register(t, a.URL, map[string]any{"client_name": "Night Shift", "redirect_uris": []string{cb.redirectURI()}})
	if status != http.StatusCreated {
		t.Fatalf("registration: %d %v", status, reg)
	}
	agent := newOAuthAgent(a.URL, reg["client_id"].(string), cb)
	verifier := oauth2.GenerateVerifier()
	newAgentBrowser(t, a.URL).authorize(agent.conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier),
		resourceOf(public, "demo")), "admin", adminPassword, "allow")
	tok, err := agent.conf.Exchange(context.Background(), cb.query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if !strings.HasPrefix(tok.AccessToken, "rnda_") {
		t.Fatalf("access token %.5s…, want rnda_", tok.AccessToken)
	}

	cs := agentSession(t, b.URL+"/mcp/demo", tok.AccessToken, nil)
	listed, err := cs.ListTools(t.Context(), nil)
	if err != nil || !slices.ContainsFunc(listed.Tools, func(tl *mcp.Tool) bool { return tl.Name == "current_time" }) {
		t.Fatalf("tools/list with the OAuth token: %v", err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "current_time", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.HasPrefix(resultOf(res), "The time is ") {
		t.Fatalf("current_time with the OAuth token: %v %v", res, err)
	}

	// Not granted for other: 401, pointing at other's metadata.
	status, hdr, body := rawRPC(t, b.URL+"/mcp/other", tok.AccessToken, "tools/list", "")
	meta := public + "/.well-known/oauth-protected-resource/mcp/other"
	if want := `Bearer resource_metadata="` + meta + `"`; status != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != want {
		t.Errorf("the token at /mcp/other: %d, WWW-Authenticate %q; want 401, %q (%s)", status, hdr.Get("WWW-Authenticate"), want, body)
	}
	resp, err := http.Get(b.URL + strings.TrimPrefix(meta, public))
	if err != nil {
		t.Fatal(err)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	err = json.NewDecoder(resp.Body).Decode(&prm)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || prm.Resource != public+"/mcp/other" ||
		!slices.Equal(prm.AuthorizationServers, []string{public}) {
		t.Errorf("protected resource metadata: %d %+v %v; want resource %s/mcp/other, authorization_servers [%s]",
			resp.StatusCode, prm, err, public, public)
	}

	// The call names the OAuth client.
	c := newClient(t, db)
	_, list := c.do("GET", a.URL+"/api/v1/calls", "", "")
	var page struct {
		Calls []struct {
			Tool  string `json:"tool"`
			Agent *struct {
				Name        string `json:"name"`
				OAuthClient string `json:"oauthClient"`
			} `json:"agent"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(list, &page); err != nil || len(page.Calls) != 1 || page.Calls[0].Agent == nil ||
		page.Calls[0].Agent.OAuthClient != "Night Shift" || page.Calls[0].Agent.Name != "test-agent" {
		t.Errorf("the call's agent: %s, want test-agent through the OAuth client Night Shift", list)
	}

	// Disconnect on the account page: the token is refused everywhere.
	c.login(a.URL, "admin", adminPassword)
	row := c.page(a.URL + "/account").Find(`[data-testid=agent]`)
	if row.Length() != 1 {
		t.Fatalf("connected agents: %d rows, want 1", row.Length())
	}
	if status, _ := c.post(a.URL+row.Find(`form`).AttrOr("action", ""), url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("disconnect: %d", status)
	}
	for _, inst := range []*instance{a, b} {
		if status, _, body := rawRPC(t, inst.URL+"/mcp/demo", tok.AccessToken, "tools/list", ""); status != http.StatusUnauthorized {
			t.Errorf("a disconnected agent's token on %s: %d %s, want 401", inst.URL, status, body)
		}
	}
	if _, err := cs.ListTools(t.Context(), nil); err == nil {
		t.Errorf("the go-sdk client after disconnect: %v, want refused", err)
	}
}
