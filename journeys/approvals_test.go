package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approvals: a rule of the server's asks people before a tool runs. The
// server behind is a go-sdk server of the tests' own (a bank), which
// counts the tools/call requests it gets.

// bank is a go-sdk MCP server with a transfer tool that says what it
// sent, and counts the transfers it was asked for.
type bank struct {
	URL string
	mu  sync.Mutex
	// calls are the arguments of each tools/call, as received.
	calls []map[string]any
}

func (b *bank) transfers() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]map[string]any(nil), b.calls...)
}

func newBank(t *testing.T) *bank {
	t.Helper()
	b := &bank{}
	s := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1.0.0"}, nil)
	destructive := true
	type transferArgs struct {
		Amount float64 `json:"amount" jsonschema:"how much to send"`
		To     string  `json:"to" jsonschema:"who gets it"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "transfer", Description: "Sends money from the company account.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}},
		func(_ context.Context, _ *mcp.CallToolRequest, in transferArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Sent " +
				strings.TrimSuffix(strings.TrimSuffix(jsonNumber(in.Amount), ".0"), ".00") + " to " + in.To}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var rpc struct {
			Method string `json:"method"`
			Params struct {
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &rpc) == nil && rpc.Method == "tools/call" {
			b.mu.Lock()
			b.calls = append(b.calls, rpc.Params.Arguments)
			b.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b.URL = srv.URL + "/mcp"
	return b
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// approvalWorld is two instances in front of the bank, whose transfers of
// more than 1000 need two of team finance (fay, gus, hal, ida, jon); ann
// makes them.
type approvalWorld struct {
	t    *testing.T
	db   string
	bank *bank
	a, b *instance
	// people are API clients by name.
	people map[string]*client
}

const twoOfFinance = `[{"tools": ["transfer"], "when": "args.amount > 1000", "ask": "team:finance", "needs": 2}]`

func newApprovalWorld(t *testing.T, rules string) *approvalWorld {
	t.Helper()
	return newApprovalWorldWith(t, rules, nil)
}

// newApprovalWorldWith is newApprovalWorld with more settings.
func newApprovalWorldWith(t *testing.T, rules string, more map[string]string) *approvalWorld {
	t.Helper()
	db := newDatabase(t)
	w := &approvalWorld{t: t, db: db, bank: newBank(t), people: map[string]*client{}}
	env := map[string]string{"MCP_SERVERS": "bank=" + w.bank.URL}
	for k, v := range more {
		env[k] = v
	}
	w.a = startInstance(t, db, env, nil)
	w.b = startInstance(t, db, env, nil)
	cli(t, db, "", "team", "add", "finance")
	for _, name := range []string{"ann", "bob", "fay", "gus", "hal", "ida", "jon"} {
		cli(t, db, "a long password\n", "user", "add", name)
		if name != "ann" && name != "bob" {
			cli(t, db, "", "team", "member", "add", "finance", name)
		}
		jar, _ := cookiejar.New(nil)
		w.people[name] = &client{t: t, token: newToken(t, db, name), jar: jar}
	}
	w.sql(`update servers set approvals = $1 where name = 'bank'`, rules)
	return w
}

func (w *approvalWorld) sql(query string, args ...any) {
	w.t.Helper()
	conn, err := pgx.Connect(context.Background(), w.db)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), query, args...); err != nil {
		w.t.Fatalf("%s: %v", query, err)
	}
}

// approvalCall is a call as the API shows it, with its approval.
type approvalCall struct {
	apiCall
	Approval *struct {
		State             string          `json:"state"`
		Needs             int             `json:"needs"`
		Asked             []string        `json:"asked"`
		Approved          []string        `json:"approved"`
		Waiting           []string        `json:"waiting"`
		Arguments         json.RawMessage `json:"arguments"`
		OriginalArguments json.RawMessage `json:"originalArguments"`
		Decisions         []struct {
			By        string          `json:"by"`
			For       string          `json:"for"`
			Decision  string          `json:"decision"`
			Arguments json.RawMessage `json:"arguments"`
			Reason    string          `json:"reason"`
		} `json:"decisions"`
	} `json:"approval"`
}

// call reads call id as person sees it through instance in.
func (w *approvalWorld) call(in *instance, person, id string) approvalCall {
	w.t.Helper()
	status, body := w.people[person].do("GET", in.URL+"/api/v1/calls/"+id, "", "")
	var c approvalCall
	if status != http.StatusOK || json.Unmarshal(body, &c) != nil {
		w.t.Fatalf("GET call %s as %s: %d %s", id, person, status, body)
	}
	return c
}

// decide posts person's decision through instance in.
func (w *approvalWorld) decide(in *instance, person, id, body string) (int, string) {
	w.t.Helper()
	status, out := w.people[person].do("POST", in.URL+"/api/v1/calls/"+id+"/approval", "application/json", body)
	return status, string(out)
}

// start starts a transfer through the API as ann.
func (w *approvalWorld) start(args string) approvalCall {
	w.t.Helper()
	status, body := w.people["ann"].do("POST", w.a.URL+"/api/v1/calls", "application/json",
		`{"server": "bank", "tool": "transfer", "arguments": `+args+`}`)
	var c approvalCall
	if status != http.StatusCreated || json.Unmarshal(body, &c) != nil {
		w.t.Fatalf("starting a transfer: %d %s", status, body)
	}
	return c
}

// waitingCall waits for ann's one call to wait for approval, and returns
// its id.
func (w *approvalWorld) waitingCall() string {
	w.t.Helper()
	var id string
	eventually(w.t, 20*time.Second, func() error {
		_, body := w.people["ann"].do("GET", w.a.URL+"/api/v1/calls?status=approval_required", "", "")
		var page struct {
			Calls []apiCall `json:"calls"`
		}
		if err := json.Unmarshal(body, &page); err != nil || len(page.Calls) != 1 {
			return fmt.Errorf("ann's calls waiting for approval: %s", body)
		}
		id = page.Calls[0].ID
		return nil
	})
	return id
}

// TestApprovalTwoOfFive: an agent's transfer over 1000 waits for two of
// team finance, and the bank never sees it meanwhile. Three of them
// approve in the same moment on two instances: exactly two approvals
// count, the third hears the approval has ended, the transfer runs once,
// and the agent gets its result once.
func TestApprovalTwoOfFive(t *testing.T) {
	t.Parallel()
	w := newApprovalWorld(t, twoOfFinance)
	progress := make(chan string, 10)
	cs := agentSession(t, w.a.URL+"/mcp/bank", w.people["ann"].token, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- r.Params.Message:
			default:
			}
		}})
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 2)
	go func() {
		params := &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 5000, "to": "bob"}}
		params.SetProgressToken("p1")
		res, err := cs.CallTool(t.Context(), params)
		done <- outcome{res, err}
	}()
	id := w.waitingCall()
	select {
	case msg := <-progress:
		if msg != "Waiting for 2 approvals from team:finance in Rounds" {
			t.Errorf("the agent's progress while it waits: %q", msg)
		}
	case <-time.After(10 * time.Second):
		t.Error("the agent heard no progress while its call waited for approval")
	}
	c := w.call(w.b, "fay", id)
	if c.Status != "approval_required" || c.Approval == nil || c.Approval.Needs != 2 ||
		strings.Join(c.Approval.Asked, ",") != "fay,gus,hal,ida,jon" {
		t.Fatalf("the waiting call, as fay sees it: %+v %+v", c.apiCall, c.Approval)
	}
	if n := len(w.bank.transfers()); n != 0 {
		t.Fatalf("the bank saw %d transfers before anyone approved", n)
	}

	start := make(chan struct{})
	type answer struct {
		who    string
		status int
		body   string
	}
	answers := make(chan answer, 3)
	for i, who := range []string{"fay", "gus", "hal"} {
		in := []*instance{w.a, w.b}[i%2]
		go func() {
			<-start
			status, body := w.decide(in, who, id, `{"decision": "approve"}`)
			answers <- answer{who, status, body}
		}()
	}
	close(start)
	counts := map[int]int{}
	for range 3 {
		a := <-answers
		counts[a.status]++
		if a.status == http.StatusConflict && !strings.Contains(a.body, "This approval has ended") {
			t.Errorf("%s's late approval: %s", a.who, a.body)
		}
	}
	if counts[http.StatusOK] != 2 || counts[http.StatusConflict] != 1 {
		t.Errorf("three approvals at once: %v; want two taken (200) and one refused (409)", counts)
	}
	got := <-done
	if got.err != nil || got.res.IsError || len(got.res.Content) != 1 || got.res.Content[0].(*mcp.TextContent).Text != "Sent 5000 to bob" {
		t.Fatalf("the agent's result: %+v %v", got.res, got.err)
	}
	select {
	case again := <-done:
		t.Errorf("the agent got a second result: %+v", again)
	default:
	}
	eventually(t, 5*time.Second, func() error {
		if c := w.call(w.a, "ann", id); c.Status != "complete" || len(c.Approval.Decisions) != 2 || c.Approval.State != "approved" {
			return fmt.Errorf("after the approvals: %s, %+v", c.Status, c.Approval)
		}
		return nil
	})
	if n := len(w.bank.transfers()); n != 1 {
		t.Errorf("the bank saw %d transfers, want 1", n)
	}
}

// TestApprovalRefusedAndDeclined: the caller cannot approve their own
// transfer, nor can someone not asked (403, with a sentence). A decline
// ends it at once: the agent, a go-sdk client, gets the reason as an
// isError result, the bank never sees the call, and a decision after the
// end is refused (409).
func TestApprovalRefusedAndDeclined(t *testing.T) {
	t.Parallel()
	w := newApprovalWorld(t, twoOfFinance)
	cs := agentSession(t, w.b.URL+"/mcp/bank", w.people["ann"].token, nil)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 9000, "to": "eve"}})
		if err != nil {
			t.Errorf("the agent's call: %v", err)
		}
		done <- res
	}()
	id := w.waitingCall()

	for _, c := range []struct{ who, want string }{
		{"ann", "You cannot decide on the approval of your own call: someone else asked must."},
		{"bob", "You are not among the people asked to decide on this call."},
	} {
		status, body := w.decide(w.a, c.who, id, `{"decision": "approve"}`)
		if status != http.StatusForbidden || !strings.Contains(body, c.want) {
			t.Errorf("%s approving: %d %s; want 403 saying %q", c.who, status, body, c.want)
		}
	}
	status, body := w.decide(w.b, "ida", id, `{"decision": "decline", "reason": "Eve is not a supplier of ours."}`)
	if status != http.StatusOK {
		t.Fatalf("ida declining: %d %s", status, body)
	}
	res := <-done
	want := "Declined by ida: Eve is not a supplier of ours."
	if res == nil || !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != want {
		t.Errorf("the agent's result: %+v; want isError saying %q", res, want)
	}
	c := w.call(w.a, "ann", id)
	if c.Status != "failed" || c.Error == nil || c.Error.Message != want {
		t.Errorf("the declined call in the API: %s %+v", c.Status, c.Error)
	}
	if status, body := w.decide(w.a, "fay", id, `{"decision": "approve"}`); status != http.StatusConflict {
		t.Errorf("approving after the decline: %d %s; want 409", status, body)
	}
	if n := len(w.bank.transfers()); n != 0 {
		t.Errorf("the bank saw %d transfers of a declined call", n)
	}
}

// TestApprovalEditedArguments: an approver lowers the amount: the count
// starts again, so the earlier approval of the first amount no longer
// counts; once two approve the lowered amount, the bank gets it, and the
// call's history (API and page) shows both amounts and each decision.
func TestApprovalEditedArguments(t *testing.T) {
	t.Parallel()
	w := newApprovalWorld(t, twoOfFinance)
	id := w.start(`{"amount": 5000, "to": "bob"}`).ID
	if c := w.call(w.a, "ann", id); c.Status != "approval_required" {
		t.Fatalf("the transfer's status: %s", c.Status)
	}
	if status, body := w.decide(w.a, "fay", id, `{"decision": "approve"}`); status != http.StatusOK {
		t.Fatalf("fay approving: %d %s", status, body)
	}
	status, body := w.decide(w.b, "gus", id, `{"decision": "approve", "arguments": {"amount": 2000, "to": "bob"}, "reason": "Half now."}`)
	var c approvalCall
	if status != http.StatusOK || json.Unmarshal([]byte(body), &c) != nil {
		t.Fatalf("gus approving less: %d %s", status, body)
	}
	if c.Status != "approval_required" || strings.Join(c.Approval.Approved, ",") != "gus" {
		t.Errorf("after gus changed the amount: %s, approved %v; want still waiting, gus's alone counting", c.Status, c.Approval.Approved)
	}
	if status, body := w.decide(w.a, "hal", id, `{"decision": "approve"}`); status != http.StatusOK {
		t.Fatalf("hal approving: %d %s", status, body)
	}
	eventually(t, 10*time.Second, func() error {
		if c = w.call(w.b, "ann", id); c.Status != "complete" {
			return fmt.Errorf("the approved transfer: %s", c.Status)
		}
		return nil
	})
	if got := w.bank.transfers(); len(got) != 1 || got[0]["amount"] != 2000.0 {
		t.Errorf("the bank got %v; want one transfer of 2000", got)
	}
	if !bytes.Contains(c.Result, []byte("Sent 2000 to bob")) {
		t.Errorf("the result: %s", c.Result)
	}
	a := c.Approval
	if !sameJSONText(a.OriginalArguments, `{"amount": 5000, "to": "bob"}`) || !sameJSONText(a.Arguments, `{"amount": 2000, "to": "bob"}`) ||
		len(a.Decisions) != 3 || a.Decisions[1].Reason != "Half now." || !sameJSONText(a.Decisions[1].Arguments, `{"amount": 2000, "to": "bob"}`) {
		t.Errorf("the approval's history: %+v", a)
	}
	ann := w.people["ann"]
	ann.login(w.a.URL, "ann", "a long password")
	_, page := ann.do("GET", w.a.URL+"/calls/"+id, "", "")
	for _, want := range []string{`data-testid="approval-original"`, `&#34;amount&#34;: 5000`, `data-testid="approval-changed"`,
		`&#34;amount&#34;: 2000`, "Half now."} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the call's page does not show %s", want)
		}
	}
}

// sameJSONText says whether raw is the JSON want says.
func sameJSONText(raw json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestApprovalWhenArgs: the rule asks only when its condition on the
// arguments holds: a small transfer goes to the bank at once, a large one
// waits, and the bank sees only the small one.
func TestApprovalWhenArgs(t *testing.T) {
	t.Parallel()
	w := newApprovalWorld(t, twoOfFinance)
	small := w.start(`{"amount": 300, "to": "bob"}`).ID
	eventually(t, 10*time.Second, func() error {
		if c := w.call(w.a, "ann", small); c.Status != "complete" || c.Approval != nil {
			return fmt.Errorf("the small transfer: %s, approval %+v", c.Status, c.Approval)
		}
		return nil
	})
	large := w.start(`{"amount": 3000, "to": "bob"}`)
	if large.Status != "approval_required" {
		t.Errorf("the large transfer: %s; want approval_required", large.Status)
	}
	if got := w.bank.transfers(); len(got) != 1 || got[0]["amount"] != 300.0 {
		t.Errorf("the bank got %v; want the small transfer alone", got)
	}
	// Rounds' own question is in the inbox of the people asked.
	fay := w.people["fay"]
	fay.login(w.b.URL, "fay", "a long password")
	_, inbox := fay.do("GET", w.b.URL+"/inbox", "", "")
	if !bytes.Contains(inbox, []byte("/calls/"+large.ID)) || !bytes.Contains(inbox, []byte("Rounds asks for your approval")) {
		t.Errorf("fay's inbox does not list the approval")
	}
}

// TestApprovalQuorumOutOfReach: once too few of the people asked are left
// (members gone from the team, an account disabled) to reach the two
// approvals needed, the call ends declined at once, saying so.
func TestApprovalQuorumOutOfReach(t *testing.T) {
	t.Parallel()
	w := newApprovalWorld(t, twoOfFinance)
	id := w.start(`{"amount": 5000, "to": "bob"}`).ID
	w.sql(`delete from team_members where user_id in (select id from users where name in ('hal', 'ida', 'jon'))`)
	w.sql(`update users set disabled = true where name = 'gus'`)
	if status, body := w.decide(w.a, "fay", id, `{"decision": "approve"}`); status != http.StatusOK {
		t.Fatalf("fay approving: %d %s", status, body)
	}
	c := w.call(w.b, "ann", id)
	want := "Declined: the people left who may decide can no longer give the 2 approvals this call needs."
	if c.Status != "failed" || c.Error == nil || c.Error.Message != want || c.Approval.State != "declined" {
		t.Errorf("with one approval and nobody left: %s %+v; want failed saying %q", c.Status, c.Error, want)
	}
	if n := len(w.bank.transfers()); n != 0 {
		t.Errorf("the bank saw %d transfers", n)
	}
}
