package journeys

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/store"
)

// agentCall starts a call of tool on server demo as an agent would through
// Rounds' front door (store.NewCall.Agent), for owner, with the API token
// named tokenName, and returns its id. The instance's engine sends it.
func agentCall(t *testing.T, db, owner, tokenName, tool, args string, agent store.Agent) string {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.UserByName(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := st.CreateToken(ctx, u.ID, tokenName)
	if err != nil {
		t.Fatal(err)
	}
	agent.TokenID = &tok.ID
	srv, err := st.ServerByName(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: owner, Method: "tools/call", Target: tool,
		Arguments: json.RawMessage(args), Agent: &agent,
		Audit: &store.AuditEntry{Instance: "test", Actor: owner, Action: "call.started", Detail: map[string]any{"server": "demo", "tool": tool}}})
	if err != nil {
		t.Fatal(err)
	}
	return call.ID
}

// TestAgentCallSeen: a call an agent started, whose question the agent is
// asked, names the agent in the API's call (token by name, never its
// secret) with the round asking the agent; the call page says which agent
// asked, for whom, through which token, and that its owner may answer
// instead; the round is in nobody's inbox; the admin's calls list finds it
// by the agent's name and no other; the audit log names the agent.
func TestAgentCallSeen(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	id := agentCall(t, db, "admin", "laptop", "confirm_delete", `{"path":"/tmp/x"}`,
		store.Agent{Name: "claude-code", Version: "2.1", Protocol: "2026-07-28", Can: store.AgentCan{Form: true}})
	c.waitFor(inst.URL, id, 20*time.Second, roundIs(1))

	status, body := c.do("GET", inst.URL+"/api/v1/calls/"+id, "", "")
	if status != http.StatusOK {
		t.Fatalf("GET the call: %d %s", status, body)
	}
	fetchOpenAPI(t, inst.URL).check("GET", "/calls/{id}", status, body)
	var got struct {
		Agent map[string]any `json:"agent"`
		Round struct {
			Asks string `json:"asks"`
		} `json:"round"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "claude-code", "version": "2.1", "protocol": "2026-07-28", "token": "laptop"}
	if len(got.Agent) != len(want) {
		t.Errorf("the API's agent = %v, want %v", got.Agent, want)
	}
	for k, v := range want {
		if got.Agent[k] != v {
			t.Errorf("the API's agent[%q] = %v, want %v", k, got.Agent[k], v)
		}
	}
	if got.Round.Asks != store.AsksAgent {
		t.Errorf("the round asks %q, want agent", got.Round.Asks)
	}
	// A call no agent started says so with null.
	plain := c.startCall(inst.URL, "confirm_delete", `{"path":"/tmp/y"}`)
	if _, b := c.do("GET", inst.URL+"/api/v1/calls/"+plain.ID, "", ""); !strings.Contains(string(b), `"agent":null`) {
		t.Errorf("a call started through the API: %s, want \"agent\":null", b)
	}

	c.login(inst.URL, "admin", adminPassword)
	page := c.page(inst.URL + "/calls/" + id)
	if who := strings.Join(strings.Fields(page.Find(`[data-testid="call-agent"]`).Text()), " "); !strings.Contains(who, "claude-code 2.1") ||
		!strings.Contains(who, "on behalf of admin") || !strings.Contains(who, "API token laptop") {
		t.Errorf("the call page names the agent as %q", who)
	}
	if asked := page.Find(`[data-testid="agent-asked"]`).Text(); asked != "Asked of claude-code 2.1; you can answer here instead." {
		t.Errorf("the call page says %q of whom the round asks", asked)
	}
	if page.Find(`form[data-testid="round-form"], form[action*="/rounds/1"]`).Length() == 0 {
		t.Error("the call page gives its owner no form to answer the round the agent is asked")
	}
	inbox := c.page(inst.URL + "/inbox")
	if inbox.Find(`a[href="/calls/`+id+`"]`).Length() != 0 {
		t.Error("the inbox lists a round the agent is asked")
	}
	if inbox.Find(`a[href="/calls/`+plain.ID+`"]`).Length() == 0 {
		t.Error("the inbox does not list the round of the call started through the API (the test sees nothing)")
	}

	for agent, found := range map[string]bool{"claude-code": true, "cursor": false} {
		list := c.page(inst.URL + "/admin/calls?agent=" + url.QueryEscape(agent))
		if n := list.Find(`a[href="/admin/calls/` + id + `"]`).Length(); (n > 0) != found {
			t.Errorf("the admin's calls filtered by agent %q list the agent's call: %v, want %v", agent, n > 0, found)
		}
		if list.Find(`a[href="/admin/calls/`+plain.ID+`"]`).Length() != 0 {
			t.Errorf("the admin's calls filtered by agent %q list a call no agent started", agent)
		}
	}
	audit := c.page(inst.URL + "/admin/audit?target=" + id)
	if !strings.Contains(audit.Text(), `"agent": "claude-code 2.1"`) {
		t.Errorf("the audit log of the call's start does not name the agent:\n%s", audit.Find("table").Text())
	}
}

// TestAgentQuestionsSetting: the admin server page shows who answers
// agents' questions ("agent" at first), refuses a person who does not
// exist with the reason and keeps the setting, and saves a team; an
// agent's call started then is the team's, and its URL-mode question
// goes to its owner alone: on the owner's page, and in the API with
// "asks": "owner".
func TestAgentQuestionsSetting(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	demoURL := demoServer(t, nil)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoURL}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	cli(t, db, "", "team", "add", "ops")
	field := func() string {
		v, _ := c.page(inst.URL + "/admin/servers/demo").Find(`input[name="agent_questions"]`).Attr("value")
		return v
	}
	if got := field(); got != "agent" {
		t.Errorf("the admin page's agentQuestions = %q, want agent", got)
	}
	status, body := c.post(inst.URL+"/admin/servers/demo", url.Values{"url": {demoURL}, "agent_questions": {"nobody"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "There is no one named &#34;nobody&#34;") {
		t.Errorf("saving agentQuestions nobody: %d, want 422 with the reason", status)
	}
	if got := field(); got != "agent" {
		t.Errorf("after a refused setting the admin page's agentQuestions = %q, want agent", got)
	}
	if status, body := c.post(inst.URL+"/admin/servers/demo", url.Values{"url": {demoURL}, "agent_questions": {"team:ops"}}); status != http.StatusSeeOther {
		t.Fatalf("saving agentQuestions team:ops: %d %s", status, body)
	}
	if got := field(); got != "team:ops" {
		t.Errorf("the admin page's agentQuestions = %q, want team:ops", got)
	}
	id := agentCall(t, db, "admin", "laptop", "connect_account", `{}`,
		store.Agent{Name: "cursor", Protocol: "2026-07-28", Can: store.AgentCan{Form: true}})
	c.waitFor(inst.URL, id, 20*time.Second, roundIs(1))
	_, raw := c.do("GET", inst.URL+"/api/v1/calls/"+id, "", "")
	var got struct {
		Assignee string `json:"assignee"`
		Round    struct {
			Asks string `json:"asks"`
		} `json:"round"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Assignee != "team:ops" || got.Round.Asks != store.AsksOwner {
		t.Errorf("the agent's call: assignee %q, its URL-mode round asks %q; want team:ops and owner", got.Assignee, got.Round.Asks)
	}
	waits := strings.Join(strings.Fields(c.page(inst.URL+"/calls/"+id).Find(`[data-testid="agent-waiting"]`).Text()), " ")
	if waits != "cursor is waiting for admin to answer." {
		t.Errorf("the call page says %q of whom the agent waits for", waits)
	}
	// A member of the team the call is assigned to sees the call, and
	// whom it waits for, but no form to answer its owner's question.
	cli(t, db, "a long enough password\n", "user", "add", "bob")
	cli(t, db, "", "team", "member", "add", "ops", "bob")
	jar, _ := cookiejar.New(nil)
	bob := &client{t: t, jar: jar}
	bob.login(inst.URL, "bob", "a long enough password")
	page := bob.page(inst.URL + "/calls/" + id)
	if page.Find(`[data-testid="agent-waiting"]`).Length() != 1 || page.Find(`form[data-testid="round-form"]`).Length() != 0 {
		t.Errorf("the team member's page of the call asking its owner: waiting notice %d, forms %d; want the notice and no form",
			page.Find(`[data-testid="agent-waiting"]`).Length(), page.Find(`form[data-testid="round-form"]`).Length())
	}
	if c.page(inst.URL+"/calls/"+id).Find(`form[data-testid="round-form"]`).Length() != 1 {
		t.Error("the owner's page of the call offers no form to answer its URL-mode question")
	}
}
