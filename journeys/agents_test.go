package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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
	return rawRPCIn(t.Context(), t, url, token, method, params)
}

// rawRPCIn is rawRPC in ctx: a request that ends with ctx closes its stream.
func rawRPCIn(ctx context.Context, t *testing.T, url, token, method, params string) (int, http.Header, []byte) {
	t.Helper()
	return rawRPCCaps(ctx, t, url, token, method, params, "{}")
}

// rawRPCWith is rawRPC from an agent that declares the client
// capabilities caps (a JSON object).
func rawRPCWith(t *testing.T, url, token, method, params, caps string) (int, http.Header, []byte) {
	t.Helper()
	return rawRPCCaps(t.Context(), t, url, token, method, params, caps)
}

func rawRPCCaps(ctx context.Context, t *testing.T, url, token, method, params, caps string) (int, http.Header, []byte) {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `,` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = strings.TrimSuffix(params, "}") + "," + meta + "}"
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	var named struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if json.Unmarshal([]byte(params), &named) == nil && named.Name+named.URI != "" {
		req.Header.Set("Mcp-Name", named.Name+named.URI)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil && ctx.Err() != nil {
		return 0, nil, nil
	}
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

	// Each list, byte for byte as the demo sends it.
	var tools []json.RawMessage
	for _, l := range [][2]string{{"tools/list", "tools"}, {"prompts/list", "prompts"}, {"resources/list", "resources"},
		{"resources/templates/list", "resourceTemplates"}} {
		_, _, direct := rawRPC(t, demoURL, "", l[0], "")
		_, _, through := rawRPC(t, b.URL+"/mcp/demo", token, l[0], "")
		items := func(body []byte) []json.RawMessage {
			var m struct {
				Result map[string]json.RawMessage `json:"result"`
			}
			var out []json.RawMessage
			if err := json.Unmarshal(sseData(body), &m); err != nil || json.Unmarshal(m.Result[l[1]], &out) != nil {
				t.Fatalf("%s: %v %s", l[0], err, body)
			}
			return out
		}
		d, r := items(direct), items(through)
		if len(d) == 0 || len(r) != len(d) {
			t.Fatalf("%s: %d through Rounds, %d from the demo", l[0], len(r), len(d))
		}
		for i, want := range d {
			if got := r[i]; !bytes.Equal(got, want) {
				t.Errorf("%s, item %d through Rounds:\n%s\nfrom the demo:\n%s", l[0], i, got, want)
			}
		}
		if l[1] == "tools" {
			tools = d
		}
	}

	cs := agentSession(t, a.URL+"/mcp/demo", token, nil)
	if got := cs.InitializeResult(); got.Capabilities == nil || got.Capabilities.Tools == nil {
		t.Errorf("server/discover: %+v, want the tools capability", got)
	}
	listed, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(listed.Tools) != len(tools) {
		t.Fatalf("the agent's tools/list: %v, %d tools", err, len(listed.Tools))
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "current_time", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) == 0 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "The time is ") {
		t.Errorf("current_time through Rounds: %+v", res)
	}
	read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "demo://greetings/Ada"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "Hello, Ada!" {
		t.Errorf("reading a resource through Rounds: %+v %v", read, err)
	}
	// The call is the token owner's, and names the agent.
	c := newClient(t, db)
	_, list := c.do("GET", b.URL+"/api/v1/calls", "", "")
	if !bytes.Contains(list, []byte(`"current_time"`)) {
		t.Errorf("the owner's calls do not show the agent's: %s", list)
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

	// A prompt's question, the same way.
	pp := &mcp.GetPromptParams{Name: "trip_plan", Arguments: map[string]string{"destination": "Faro"}}
	got, err := onB.GetPrompt(t.Context(), pp)
	if err != nil || !got.NeedsInput() || got.InputRequests["trip"] == nil {
		t.Fatalf("trip_plan through Rounds: %+v %v", got, err)
	}
	pp.InputResponses = mcp.InputResponseMap{"trip": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"days": 2}}}
	pp.RequestState = got.RequestState
	got, err = onA.GetPrompt(t.Context(), pp)
	if err != nil || got.NeedsInput() || len(got.Messages) != 2 || got.Messages[1].Content.(*mcp.TextContent).Text != "Plan a 2-day trip to Faro." {
		t.Errorf("the prompt answered by the agent: %+v %v", got, err)
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

// callOf finds the owner's call of tool through the API, once it asks.
func callOf(t *testing.T, c *client, base, tool string) apiCall {
	t.Helper()
	var found apiCall
	eventually(t, 15*time.Second, func() error {
		_, b := c.do("GET", base+"/api/v1/calls?status=input_required", "", "")
		var page struct {
			Calls []struct {
				apiCall
				Tool string `json:"tool"`
			} `json:"calls"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return err
		}
		for _, call := range page.Calls {
			if call.Tool == tool {
				found = call.apiCall
				return nil
			}
		}
		return errors.New("no call of " + tool + " asks yet")
	})
	return found
}

// TestAgentWaitsForAPerson: a round for a person in Rounds keeps the
// agent's request open, with progress naming who is asked, said again past
// the keepalive interval; the person answers on the other instance after
// it, and the agent gets the server's result.
func TestAgentWaitsForAPerson(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past the keepalive interval, at human speed")
	}
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	token := newToken(t, db, "admin")
	said := make(chan *mcp.ProgressNotificationParams, 10)
	cs := agentSession(t, a.URL+"/mcp/demo", token, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { said <- req.Params }})

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "confirm_delete", Arguments: map[string]any{"path": "/srv/old.log"}}
		params.SetProgressToken("delete-1")
		res, err := cs.CallTool(t.Context(), params)
		done <- outcome{res, err}
	}()
	// An agent that asked for no progress hears SSE comments meanwhile.
	plain := make(chan []byte, 1)
	go func() {
		_, hdr, body := rawRPC(t, b.URL+"/mcp/demo", token, "tools/call", `{"name":"schedule","arguments":{}}`)
		plain <- append([]byte(hdr.Get("Content-Type")+"\n"), body...)
	}()
	// While the server works it says so; then, once the question is
	// asked, who is to answer, and again at the keepalive interval.
	var asked []time.Time
	for len(asked) < 2 {
		var p *mcp.ProgressNotificationParams
		select {
		case p = <-said:
		case o := <-done:
			t.Fatalf("the call answered before the person did: %+v %v", o.res, o.err)
		case <-time.After(time.Minute):
			t.Fatal("no progress within a minute")
		}
		if p.ProgressToken != "delete-1" {
			t.Errorf("progress for token %v", p.ProgressToken)
		}
		if p.Message == "Waiting for admin to answer in Rounds" {
			asked = append(asked, time.Now())
		} else if len(asked) > 0 || p.Message != "Waiting for demo" {
			t.Errorf("progress: %+v", p)
		}
	}
	if gap := asked[1].Sub(asked[0]); gap < 15*time.Second || gap > 25*time.Second {
		t.Errorf("the progress came again after %s; want it at the keepalive interval (20s)", gap)
	}
	c := newClient(t, db)
	call := callOf(t, c, b.URL, "confirm_delete")
	if status, body := c.answer(b.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answering on B: %d %s", status, body)
	}
	o := <-done
	if o.err != nil || o.res.IsError || resultOf(o.res) != "Deleted /srv/old.log" {
		t.Fatalf("the agent's result: %+v %v", o.res, o.err)
	}
	call = callOf(t, c, a.URL, "schedule")
	if status, body := c.answer(a.URL, call.ID, 1, `{"when":{"action":"accept","content":{"date":"2031-05-04","reminder":"2031-05-03T09:00:00Z"}}}`); status != http.StatusAccepted {
		t.Fatalf("answering on A: %d %s", status, body)
	}
	body := <-plain
	if !bytes.HasPrefix(body, []byte("text/event-stream\n")) || !bytes.Contains(body, []byte("\n: waiting\n\n")) ||
		!bytes.Contains(sseData(body), []byte("Scheduled for 2031-05-04")) {
		t.Errorf("the stream of an agent that asked for no progress:\n%s", body)
	}
}

// TestAgentWaitRunsOut: past AGENT_WAIT the agent is told the call goes on
// in Rounds (isError, naming the call); a person answers later on the
// other instance, and the agent reads the outcome as a resource. Only the
// owner may read it.
func TestAgentWaitRunsOut(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "AGENT_WAIT": "3s"}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	token := newToken(t, db, "admin")
	cli(t, db, "a long password\n", "user", "add", "bob")
	cs := agentSession(t, a.URL+"/mcp/demo", token, nil)
	bob := agentSession(t, b.URL+"/mcp/demo", newToken(t, db, "bob"), nil)

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "confirm_delete", Arguments: map[string]any{"path": "/srv/a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	text := resultOf(res)
	if !res.IsError || !strings.Contains(text, "goes on in Rounds") || !strings.Contains(text, "rounds://calls/") {
		t.Fatalf("past AGENT_WAIT: %+v %q", res, text)
	}
	c := newClient(t, db)
	call := callOf(t, c, b.URL, "confirm_delete")
	if !strings.Contains(text, call.ID) {
		t.Errorf("the answer %q does not name call %s", text, call.ID)
	}
	read := func(cs *mcp.ClientSession) (map[string]any, error) {
		r, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "rounds://calls/" + call.ID})
		if err != nil {
			return nil, err
		}
		var out map[string]any
		err = json.Unmarshal([]byte(r.Contents[0].Text), &out)
		return out, err
	}
	if got, err := read(cs); err != nil || got["status"] != "input_required" {
		t.Errorf("the outcome while it waits: %v %v", got, err)
	}
	if _, err := read(bob); err == nil {
		t.Error("bob read admin's call")
	}
	if status, body := c.answer(b.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answering on B: %d %s", status, body)
	}
	c.waitFor(b.URL, call.ID, 15*time.Second, isDone)
	got, err := read(cs)
	if err != nil || got["status"] != "complete" || !strings.Contains(fmt.Sprint(got["result"]), "Deleted /srv/a.txt") {
		t.Errorf("the outcome at the end: %v %v", got, err)
	}
}

// TestAgentStopsItsCall: an agent that closes its request cancels the call,
// which says the agent stopped it; an instance that shuts down while an
// agent waits does not, and the call goes on on the other.
func TestAgentStopsItsCall(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	token := newToken(t, db, "admin")
	c := newClient(t, db)

	ctx, cancel := context.WithCancel(t.Context())
	cs := agentSession(t, a.URL+"/mcp/demo", token, nil)
	stopped := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "confirm_delete", Arguments: map[string]any{"path": "/srv/b.txt"}})
		stopped <- err
	}()
	call := callOf(t, c, b.URL, "confirm_delete")
	cancel()
	<-stopped
	ended := c.waitFor(b.URL, call.ID, 15*time.Second, isDone)
	if ended.Status != "cancelled" || ended.Error == nil || ended.Error.Message != "The agent (test-agent 0.9) stopped this call." {
		t.Errorf("after the agent closed its request: %s %+v", ended.Status, ended.Error)
	}

	// A stream closed, with no notification: the 2026-07-28 way.
	ctx, cancel = context.WithCancel(t.Context())
	go func() {
		rawRPCIn(ctx, t, a.URL+"/mcp/demo", token, "tools/call", `{"name":"schedule","arguments":{}}`)
		stopped <- nil
	}()
	call = callOf(t, c, b.URL, "schedule")
	cancel()
	<-stopped
	ended = c.waitFor(b.URL, call.ID, 15*time.Second, isDone)
	if ended.Status != "cancelled" || ended.Error == nil || ended.Error.Message != "The agent (raw 1) stopped this call." {
		t.Errorf("after the agent closed its stream: %s %+v", ended.Status, ended.Error)
	}

	x := startInstance(t, db, env, nil)
	onX := agentSession(t, x.URL+"/mcp/demo", token, nil)
	answered := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := onX.CallTool(t.Context(), &mcp.CallToolParams{Name: "collect_user_info", Arguments: map[string]any{}})
		answered <- res
	}()
	call = callOf(t, c, b.URL, "collect_user_info")
	shut, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	if err := x.Shutdown(shut); err != nil {
		t.Fatal(err)
	}
	if res := <-answered; res == nil || !res.IsError || !strings.Contains(resultOf(res), call.ID) {
		t.Errorf("the agent, as its instance stopped: %+v", res)
	}
	if status, body := c.answer(b.URL, call.ID, 1, `{"user":{"action":"accept","content":{"name":"Ada"}}}`); status != http.StatusAccepted {
		t.Fatalf("the call did not go on after its agent's instance stopped: %d %s", status, body)
	}
}

// TestAgentGetsTheServersError: a JSON-RPC error of the server behind
// comes to the agent with its code and message.
func TestAgentGetsTheServersError(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	demoURL := demoServer(t, nil)
	a := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoURL}, nil)
	token := newToken(t, db, "admin")
	var direct, through struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	status, _, body := rawRPC(t, demoURL, "", "tools/call", `{"name":"no_such_tool","arguments":{}}`)
	if err := json.Unmarshal(sseData(body), &direct); err != nil || direct.Error == nil {
		t.Fatalf("the demo's own answer: %s", body)
	}
	statusThrough, _, body := rawRPC(t, a.URL+"/mcp/demo", token, "tools/call", `{"name":"no_such_tool","arguments":{}}`)
	if err := json.Unmarshal(sseData(body), &through); err != nil || through.Error == nil || *through.Error != *direct.Error || statusThrough != status {
		t.Errorf("through Rounds: %d %s; want the demo's %d, error %+v", statusThrough, body, status, direct.Error)
	}
}
