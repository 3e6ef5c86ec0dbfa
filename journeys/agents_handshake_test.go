package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcptest"
)

// A 2025-11-25 agent (the go-sdk client pinned to that revision) reaches
// the servers behind Rounds over a session: initialize, Mcp-Session-Id,
// questions asked on its open tools/call, its answers posted back.

// router sends an agent's HTTP requests to instances by what they carry:
// initialize to one, the agent's answers to another, the rest to a third,
// so a session and a round cross instances. It adds the bearer token.
type router struct {
	token string
	mu    sync.Mutex
	init  string // initialize goes here
	rest  string // requests, notifications, DELETE and GET
	reply string // the agent's responses to Rounds' questions
	sent  []string
}

func (rt *router) to(init, rest, reply string) {
	rt.mu.Lock()
	rt.init, rt.rest, rt.reply = init, rest, reply
	rt.mu.Unlock()
}

func (rt *router) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		_ = r.Body.Close()
	}
	var msg struct {
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(body, &msg)
	rt.mu.Lock()
	base := rt.rest
	switch {
	case msg.Method == "initialize":
		base = rt.init
	case msg.Method == "" && (msg.Result != nil || msg.Error != nil):
		base = rt.reply
	}
	rt.sent = append(rt.sent, r.Method+" "+msg.Method+" "+base)
	rt.mu.Unlock()
	u, _ := url.Parse(base)
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Authorization", "Bearer "+rt.token)
	return http.DefaultTransport.RoundTrip(r)
}

// formAnswers is what the agent answers a form with, by field name.
var formAnswers = map[string]any{"name": "Ada", "destination": "Lisbon", "date": "2099-01-15", "passengers": 2, "class": "business"}

// haiku is the agent's model's reply to a sampling request.
const haiku = "Old pond, a frog jumps"

// handshakeAgent is a go-sdk client pinned to 2025-11-25 that answers forms
// from formAnswers (and refuses any whose message starts "Delete"), writes
// the model's reply to a sampling request, and
// notes the questions and progress it hears.
type handshakeAgent struct {
	unfit    bool // gives forms an empty name, which fits no form that wants one
	mu       sync.Mutex
	asked    []string // the messages of the forms it was asked
	progress []string
}

func (h *handshakeAgent) connect(t *testing.T, rt *router, server string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.mu.Lock()
			h.asked = append(h.asked, req.Params.Message)
			h.mu.Unlock()
			if strings.HasPrefix(req.Params.Message, "Delete") {
				return nil, errors.New("this agent deletes nothing")
			}
			schema, _ := json.Marshal(req.Params.RequestedSchema)
			var s struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			_ = json.Unmarshal(schema, &s)
			content := map[string]any{}
			for field := range s.Properties {
				if v, ok := formAnswers[field]; ok {
					content[field] = v
				}
			}
			if h.unfit {
				content["name"] = ""
			}
			return &mcp.ElicitResult{Action: "accept", Content: content}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "agent-model", Content: &mcp.TextContent{Text: haiku}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, req.Params.Message)
			h.mu.Unlock()
		},
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "old-agent", Version: "1.2"}, opts)
	transport := &mcp.StreamableClientTransport{Endpoint: "http://rounds.invalid/mcp/" + server, HTTPClient: &http.Client{Transport: rt}}
	cs, err := client.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (h *handshakeAgent) heard() (asked, progress []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.asked...), append([]string(nil), h.progress...)
}

// callText calls a tool and returns its result's first text.
func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("a result with no content: %+v", res)
	}
	text, _ := res.Content[0].(*mcp.TextContent)
	if text == nil {
		t.Fatalf("a result that is not text: %+v", res.Content[0])
	}
	return text.Text
}

// TestHandshakeAgentAnswers: a session begun on A lists and calls on B;
// the demo's questions go to the agent on B's stream and its answers,
// posted to A, move the call on, round after round; it writes a sampling
// reply as the model. An agent's refusal
// cancels the question. A 2026-07-28-only server behind works the same.
// After DELETE the session is gone; a GET is 405 and a request without a
// session 400.
func TestHandshakeAgentAnswers(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	fast := mcptest.NewFake(t, mcptest.FastMCP4)
	env := map[string]string{"MCP_SERVERS": "demo[sampling,roots]=" + demoServer(t, nil) + ",fast[2026-07-28]=" + fast.URL}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	rt := &router{token: newToken(t, db, "admin")}
	rt.to(a.URL, b.URL, a.URL)
	agent := &handshakeAgent{}
	cs := agent.connect(t, rt, "demo")
	if got := cs.InitializeResult(); got.ProtocolVersion != "2025-11-25" || got.Capabilities.Tools == nil || got.ServerInfo == nil {
		t.Fatalf("initialize = %+v", got)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list on B: %v", err)
	}

	got := callText(t, cs, "collect_user_info", map[string]any{})
	if got != "Hello, Ada!" {
		t.Errorf("collect_user_info = %q", got)
	}
	got = callText(t, cs, "book_flight", map[string]any{})
	if got != "Booked 2 passengers to Lisbon on 2099-01-15, Business class." {
		t.Errorf("book_flight = %q", got)
	}
	got = callText(t, cs, "confirm_delete", map[string]any{"path": "/etc/passwd"})
	if got != "Cancelled" {
		t.Errorf("confirm_delete refused by the agent = %q, want Cancelled", got)
	}
	got = callText(t, cs, "write_haiku", map[string]any{"topic": "rain"})
	if got != "A haiku about rain, by agent-model:\n"+haiku {
		t.Errorf("write_haiku = %q", got)
	}
	// The two questions of book_flight's first round are asked together, and
	// the agent answers them at once, in no set order.
	asked, _ := agent.heard()
	slices.Sort(asked)
	want := []string{"Tell us about yourself.", "Where and when do you want to fly?", "How many people are travelling?",
		"Which class for 2 passengers to Lisbon on 2099-01-15?", "Delete /etc/passwd? This cannot be undone."}
	slices.Sort(want)
	if strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Errorf("the agent was asked %q, want %q", asked, want)
	}
	// The calls name the agent, its session and revision; the rounds were
	// answered by the agent, not put to a person.
	var n int
	queryRow(t, db, `select count(*) from calls c join agent_sessions s on s.id = c.agent->>'session'
		where c.agent->>'name' = 'old-agent' and c.agent->>'protocol' = '2025-11-25' and s.server = 'demo'`, nil, &n)
	if n != 4 {
		t.Errorf("%d calls name the session, want 4", n)
	}
	queryRow(t, db, `select count(*) from rounds where asks = 'agent' and status <> 'pending'`, nil, &n)
	if n != 5 {
		t.Errorf("%d rounds answered by the agent, want 5", n)
	}

	// An answer that does not fit its form: the go-sdk client refuses its
	// own handler's answer with an error, which cancels the question, and
	// the audit log keeps what the agent said.
	sloppy := (&handshakeAgent{unfit: true}).connect(t, rt, "demo")
	if got := callText(t, sloppy, "collect_user_info", map[string]any{}); got != "Cancelled" {
		t.Errorf("collect_user_info answered with an empty name = %q, want Cancelled", got)
	}
	queryRow(t, db, `select count(*) from audit_log where action = 'round.cancelled'
		and detail->>'agent_said' like 'The agent answered with an error (-32602): %name%'`, nil, &n)
	if n != 1 {
		t.Errorf("%d audit entries keep what the agent said of its answer, want 1", n)
	}

	// A 2026-07-28-only server behind a 2025-11-25 agent.
	fs := agent.connect(t, rt, "fast")
	got = callText(t, fs, "book_flight", map[string]any{})
	if got != "Booked a flight to Lisbon on 2099-01-15" {
		t.Errorf("book_flight on the 2026-07-28 server = %q", got)
	}

	rt.mu.Lock()
	replies := 0
	for _, s := range rt.sent {
		if s == "POST  "+a.URL {
			replies++
		}
	}
	rt.mu.Unlock()
	if replies != 9 {
		t.Errorf("%d answers posted to A while B held the calls, want 9", replies)
	}

	sessionEnds(t, rt, cs.ID(), a.URL, b.URL)
}

// sessionEnds checks the edges of a session: a GET is 405, a request
// without a session 400, a made-up answer 400; after DELETE on one
// instance the session is 404 on the other.
func sessionEnds(t *testing.T, rt *router, session, a, b string) {
	t.Helper()
	do := func(method, base, session, body string) int {
		req, _ := http.NewRequestWithContext(t.Context(), method, base+"/mcp/demo", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+rt.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	if s := do("GET", a, session, ""); s != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", s)
	}
	if s := do("POST", a, "", list); s != http.StatusBadRequest {
		t.Errorf("tools/list without a session: %d, want 400", s)
	}
	if s := do("POST", b, session, `{"jsonrpc":"2.0","id":"rq_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","result":{"action":"accept"}}`); s != http.StatusBadRequest {
		t.Errorf("an answer to a question never asked: %d, want 400", s)
	}
	if s := do("POST", b, session, list); s != http.StatusOK {
		t.Errorf("tools/list in the session: %d, want 200", s)
	}
	if s := do("DELETE", a, session, ""); s != http.StatusNoContent {
		t.Errorf("DELETE: %d, want 204", s)
	}
	if s := do("POST", b, session, list); s != http.StatusNotFound {
		t.Errorf("tools/list after DELETE: %d, want 404", s)
	}
}

// agentCallWaiting is the id of the session agent's call of tool that waits
// for an answer, other than those in but.
func agentCallWaiting(t *testing.T, db, tool string, but ...string) string {
	t.Helper()
	var id string
	eventually(t, 10*time.Second, func() error {
		pool := adminPool(t, db)
		err := pool.QueryRow(t.Context(), `select id::text from calls where agent->>'session' is not null and target = $1
			and status = 'input_required' and not (id::text = any($2)) order by created_at desc limit 1`, tool, append(but, "")).Scan(&id)
		return err
	})
	return id
}

// TestHandshakeAgentWaits: with agentQuestions "owner", a 2025-11-25
// agent's call waits for a person. The agent's notifications/cancelled
// stops a call, which says so. The next call's agent hears progress, again
// after the keepalive and past the request timeout, while the owner
// answers on the other instance; the result reaches it on the stream it
// kept open.
func TestHandshakeAgentWaits(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "MCP_REQUEST_TIMEOUT": "2s", "AGENT_WAIT": "2m"}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	if _, err := adminPool(t, db).Exec(t.Context(), `update servers set agent_questions = 'owner' where name = 'demo'`); err != nil {
		t.Fatal(err)
	}
	rt := &router{token: newToken(t, db, "admin")}
	rt.to(a.URL, a.URL, b.URL)
	agent := &handshakeAgent{}
	cs := agent.connect(t, rt, "demo")
	c := newClient(t, db)

	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "collect_user_info", Arguments: map[string]any{}})
		gaveUp <- err
	}()
	stopped := agentCallWaiting(t, db, "collect_user_info")
	cancel()
	if err := <-gaveUp; err == nil {
		t.Fatal("the cancelled tools/call returned a result")
	}
	call := c.waitFor(b.URL, stopped, 10*time.Second, isDone)
	if call.Status != "cancelled" || call.Error == nil || call.Error.Message != "The agent (old-agent 1.2) stopped this call." {
		t.Fatalf("the call the agent cancelled: %+v %+v", call, call.Error)
	}
	if s := roundStatus(t, db, stopped, 1); s == "pending" {
		t.Error("the cancelled call's round still waits for an answer")
	}

	params := &mcp.CallToolParams{Name: "collect_user_info", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	result := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), params)
		result <- outcome{res, err}
	}()
	id := agentCallWaiting(t, db, "collect_user_info", stopped)
	const waiting = "Waiting for admin to answer in Rounds"
	eventually(t, 45*time.Second, func() error {
		// Said once when the round came, and again at the keepalive.
		if _, heard := agent.heard(); strings.Count(strings.Join(heard, "|"), waiting) < 2 {
			return errors.New("no keepalive progress yet: " + strings.Join(heard, "|"))
		}
		return nil
	})
	if status, body := c.answer(b.URL, id, 1, `{"user":{"action":"accept","content":{"name":"Grace"}}}`); status != http.StatusAccepted {
		t.Fatalf("the owner's answer on B: %d %s", status, body)
	}
	select {
	case o := <-result:
		if o.err != nil || len(o.res.Content) == 0 || o.res.Content[0].(*mcp.TextContent).Text != "Hello, Grace!" {
			t.Fatalf("the agent's result: %+v %v", o.res, o.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent heard no result after the owner answered")
	}
}

// TestHandshakeSessionRestarts: both instances stop while a session's call
// waits for the owner; the agent is told the call goes on. Two new
// instances serve the same session, the owner answers, and the agent
// reads the outcome as the resource rounds://calls/{id}.
func TestHandshakeSessionRestarts(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "MCP_REQUEST_TIMEOUT": "2s"}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	if _, err := adminPool(t, db).Exec(t.Context(), `update servers set agent_questions = 'owner' where name = 'demo'`); err != nil {
		t.Fatal(err)
	}
	rt := &router{token: newToken(t, db, "admin")}
	rt.to(a.URL, b.URL, a.URL)
	cs := (&handshakeAgent{}).connect(t, rt, "demo")

	result := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "collect_user_info", Arguments: map[string]any{}})
		if err != nil {
			t.Error(err)
		}
		result <- res
	}()
	id := agentCallWaiting(t, db, "collect_user_info")
	for _, in := range []*instance{a, b} {
		if err := in.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	res := <-result
	if res == nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, id) {
		t.Fatalf("the agent was not told its call goes on: %+v", res)
	}

	a2 := startInstance(t, db, env, nil)
	b2 := startInstance(t, db, env, nil)
	rt.to(a2.URL, b2.URL, a2.URL)
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatalf("the session after the restart: %v", err)
	}
	c := newClient(t, db)
	if status, body := c.answer(a2.URL, id, 1, `{"user":{"action":"accept","content":{"name":"Ada"}}}`); status != http.StatusAccepted {
		t.Fatalf("the owner's answer: %d %s", status, body)
	}
	c.waitFor(b2.URL, id, 10*time.Second, isDone)
	read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "rounds://calls/" + id})
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, `"status":"complete"`) || !strings.Contains(read.Contents[0].Text, "Hello, Ada!") {
		t.Fatalf("the outcome read through the session: %+v", read.Contents)
	}
}
