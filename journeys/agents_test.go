package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Agents reach the servers behind Rounds at /mcp/{server}, with the go-sdk
// client as the agent: the tests here see what an agent sees.

// bearer adds a token to every request of an HTTP client.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// agentSession connects the go-sdk client to url as an agent with token;
// automatic round trips are off, so input_required results come back.
func agentSession(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "0.9"}, opts)
	transport := &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}}
	cs, err := client.Connect(t.Context(), transport, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// rawRPC posts one 2026-07-28 JSON-RPC request and returns the status, the
// response headers and the body.
func rawRPC(t *testing.T, url, token, method, params string) (int, http.Header, []byte) {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = strings.TrimSuffix(params, "}") + "," + meta + "}"
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// sseData is the JSON of the last event of an SSE body, or the body.
func sseData(b []byte) []byte {
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		var last []byte
		for line := range bytes.SplitSeq(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				last = d
			}
		}
		return last
	}
	return b
}

// TestAgentSeesTheServer: an agent lists the demo's tools through Rounds
// exactly as the demo lists them, and calls a tool that asks nothing, on
// either instance; without a token it is told where to sign in.
func TestAgentSeesTheServer(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	demoURL := demoServer(t, nil)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoURL}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	token := newToken(t, db, "admin")

	status, hdr, body := rawRPC(t, a.URL+"/mcp/demo", "", "tools/list", "")
	want := `Bearer resource_metadata="` + a.URL + `/.well-known/oauth-protected-resource/mcp/demo"`
	if status != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != want {
		t.Errorf("without a token: %d, WWW-Authenticate %q; want 401, %q (body %s)", status, hdr.Get("WWW-Authenticate"), want, body)
	}
	if status, _, _ := rawRPC(t, a.URL+"/mcp/demo", "rnd_not-a-token", "tools/list", ""); status != http.StatusUnauthorized {
		t.Errorf("with a made-up token: %d, want 401", status)
	}
	if status, _, body := rawRPC(t, a.URL+"/mcp/nosuch", token, "tools/list", ""); status != http.StatusNotFound {
		t.Errorf("an unknown server: %d %s, want 404", status, body)
	}

	// The tools, byte for byte as the demo sends them.
	_, _, direct := rawRPC(t, demoURL, "", "tools/list", "")
	_, _, through := rawRPC(t, b.URL+"/mcp/demo", token, "tools/list", "")
	var d, r struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(sseData(direct), &d); err != nil || len(d.Result.Tools) == 0 {
		t.Fatalf("the demo's own tools/list: %v %s", err, direct)
	}
	if err := json.Unmarshal(sseData(through), &r); err != nil {
		t.Fatalf("tools/list through Rounds: %v %s", err, through)
	}
	if len(r.Result.Tools) != len(d.Result.Tools) {
		t.Fatalf("%d tools through Rounds, %d from the demo", len(r.Result.Tools), len(d.Result.Tools))
	}
	for i := range d.Result.Tools {
		if !bytes.Equal(d.Result.Tools[i], r.Result.Tools[i]) {
			t.Errorf("tool %d through Rounds:\n%s\nfrom the demo:\n%s", i, r.Result.Tools[i], d.Result.Tools[i])
		}
	}

	cs := agentSession(t, a.URL+"/mcp/demo", token, nil)
	if got := cs.InitializeResult(); got.Capabilities == nil || got.Capabilities.Tools == nil {
		t.Errorf("server/discover: %+v, want the tools capability", got)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != len(d.Result.Tools) {
		t.Fatalf("the agent's tools/list: %v, %d tools", err, len(tools.Tools))
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "current_time", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) == 0 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "The time is ") {
		t.Errorf("current_time through Rounds: %+v", res)
	}
	// The call is the token owner's, and names the agent.
	c := newClient(t, db)
	_, list := c.do("GET", b.URL+"/api/v1/calls", "", "")
	if !bytes.Contains(list, []byte(`"current_time"`)) {
		t.Errorf("the owner's calls do not show the agent's: %s", list)
	}
}

// agentAsked makes every round of an agent's call ask the agent, as the
// server's agentQuestions setting "agent" does for an agent that declared
// it can answer (a trigger stands in for the engine's choice).
func agentAsked(t *testing.T, db string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `
		create function test_agent_asked() returns trigger language plpgsql as $$
		begin
			if exists (select 1 from calls where id = new.call_id and agent is not null) then
				new.asks := 'agent';
			end if;
			return new;
		end $$;
		create trigger test_agent_asked before insert on rounds for each row execute function test_agent_asked();`); err != nil {
		t.Fatal(err)
	}
}

// TestAgentAnswersItsQuestion: a round that asks the agent comes back to
// it as input_required, with the server's questions as they are and a
// state of Rounds' own; the agent's retry with that state answers the
// round, on the other instance. The state is refused (-32602) once used,
// tampered with, or in someone else's hands.
func TestAgentAnswersItsQuestion(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	agentAsked(t, db)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	token := newToken(t, db, "admin")
	cli(t, db, "a long password\n", "user", "add", "bob")
	bobs := newToken(t, db, "bob")
	elicit := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return nil, errors.New("not asked this way: automatic round trips are off")
	}}
	onA := agentSession(t, a.URL+"/mcp/demo", token, elicit)
	onB := agentSession(t, b.URL+"/mcp/demo", token, elicit)
	bob := agentSession(t, b.URL+"/mcp/demo", bobs, elicit)

	params := &mcp.CallToolParams{Name: "confirm_delete", Arguments: map[string]any{"path": "/tmp/report.txt"}}
	res, err := onA.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	asked, ok := res.InputRequests["confirm"].(*mcp.ElicitParams)
	if !res.NeedsInput() || !ok || !strings.Contains(asked.Message, "Delete /tmp/report.txt?") {
		t.Fatalf("confirm_delete through Rounds: %+v; want input_required with the demo's question", res)
	}
	state := res.RequestState
	var serverState []byte
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(t.Context(), `select request_state from rounds where asks = 'agent'`).Scan(&serverState); err != nil {
		t.Fatal(err)
	}
	if state == "" || len(state) > 400 || strings.Contains(state, string(serverState)) {
		t.Errorf("the state given to the agent (%d bytes) is not Rounds' own, small one", len(state))
	}

	yes := mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}
	retry := func(cs *mcp.ClientSession, state string) (*mcp.CallToolResult, error) {
		p := *params
		p.InputResponses, p.RequestState = yes, state
		return cs.CallTool(t.Context(), &p)
	}
	refused := func(what string, err error) {
		t.Helper()
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: %v, want error -32602", what, err)
		}
	}
	_, err = retry(bob, state)
	refused("bob's retry with admin's state", err)
	_, err = retry(onB, state[:len(state)-4]+"AAAA")
	refused("a tampered state", err)

	res, err = retry(onB, state)
	if err != nil || res.NeedsInput() || res.IsError || resultOf(res) != "Deleted /tmp/report.txt" {
		t.Fatalf("the agent's answer: %+v, %v", res, err)
	}
	_, err = retry(onA, state)
	refused("the state used again", err)

	var by, audit string
	if err := conn.QueryRow(t.Context(), `select r.answered_by, (select detail->>'agent' from audit_log
		where action = 'round.answered' and target = r.call_id::text) from rounds r where asks = 'agent'`).Scan(&by, &audit); err != nil {
		t.Fatal(err)
	}
	if by != "admin" || audit != "test-agent 0.9" {
		t.Errorf("answered by %q, audit naming %q; want the owner, and the agent in the audit", by, audit)
	}
}

// resultOf is a tool result's text.
func resultOf(res *mcp.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}
