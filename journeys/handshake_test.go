package journeys

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oldServer is a handshake-era MCP server: it holds a session and asks its
// questions while the tool call is open. It records what it was told.
type oldServer struct {
	URL string

	mu      sync.Mutex
	calls   int      // tools/call requests received
	actions []string // the actions of the answers it got
}

func (s *oldServer) record(action string) {
	s.mu.Lock()
	s.actions = append(s.actions, action)
	s.mu.Unlock()
}

func (s *oldServer) seen() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, append([]string(nil), s.actions...)
}

func newOldServer(t *testing.T) *oldServer {
	t.Helper()
	s := &oldServer{}
	server := mcp.NewServer(&mcp.Implementation{Name: "old-timer", Version: "1"}, nil)
	// A question nobody will answer must not outlive the test: the SDK's
	// session close waits for its tool handlers, and the server's close
	// waits for that.
	life, stop := context.WithCancel(context.Background())
	elicit := func(ctx context.Context, req *mcp.CallToolRequest, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer context.AfterFunc(life, cancel)()
		defer cancel()
		return req.Session.Elicit(ctx, params)
	}
	ask := func(ctx context.Context, req *mcp.CallToolRequest, message, field string) (string, string, error) {
		res, err := elicit(ctx, req, &mcp.ElicitParams{
			Message: message,
			RequestedSchema: map[string]any{"type": "object", "required": []string{field},
				"properties": map[string]any{field: map[string]any{"type": "string", "title": field}}},
		})
		if err != nil {
			return "", "", err
		}
		s.record(res.Action)
		value, _ := res.Content[field].(string)
		return res.Action, value, nil
	}
	mcp.AddTool(server, &mcp.Tool{Name: "ask_twice", Description: "Asks for a name, then a colour, mid-call."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			action, name, err := ask(ctx, req, "What is your name?", "name")
			if err != nil {
				return nil, nil, err
			}
			if action != "accept" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "No name: " + action}}}, nil, nil
			}
			action, colour, err := ask(ctx, req, "And your favourite colour, "+name+"?", "colour")
			if err != nil {
				return nil, nil, err
			}
			if action != "accept" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "No colour: " + action}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " likes " + colour}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "connect", Description: "Sends the person to a web page, then says it is done."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := elicit(ctx, req, &mcp.ElicitParams{Mode: "url", Message: "Connect your account",
				URL: "https://accounts.test/connect?session=42", ElicitationID: "el-42"})
			if err != nil {
				return nil, nil, err
			}
			s.record(res.Action)
			if err := req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "el-42"}); err != nil {
				return nil, nil, err
			}
			// Give the notification time to land before the call ends.
			time.Sleep(200 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "connect: " + res.Action}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			s.mu.Lock()
			s.calls++
			s.mu.Unlock()
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(stop) // runs first
	s.URL = srv.URL
	return s
}

// TestHandshakeAcrossInstances: instance A holds the session while the
// server asks twice; both questions are answered on instance B; the call
// finishes with both answers. Ten concurrent submits of a question, across
// both instances, answer it once.
func TestHandshakeAcrossInstances(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	old := newOldServer(t)
	env := map[string]string{"MCP_SERVERS": "demo[2025-11-25]=" + old.URL}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	call := c.startCall(a.URL, "ask_twice", `{}`)
	c.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))
	statuses := make([]int, 10)
	var wg sync.WaitGroup
	for i := range statuses {
		base := []string{a.URL, b.URL}[i%2]
		wg.Go(func() {
			statuses[i], _ = c.answer(base, call.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Ada"}}}`)
		})
	}
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[http.StatusAccepted] != 1 || count[http.StatusConflict] != 9 {
		t.Fatalf("statuses = %v, want one 202 and nine 409s", count)
	}
	second := c.waitFor(b.URL, call.ID, 10*time.Second, roundIs(2))
	if !strings.Contains(string(second.Round.InputRequests["elicitation"]), "And your favourite colour, Ada?") {
		t.Errorf("round 2 = %s", second.Round.InputRequests["elicitation"])
	}
	if status, body := c.answer(b.URL, call.ID, 2, `{"elicitation":{"action":"accept","content":{"colour":"teal"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer round 2: %d %s", status, body)
	}
	done := c.waitFor(a.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Ada likes teal" {
		t.Fatalf("call = %+v", done)
	}
	if calls, actions := old.seen(); calls != 1 || strings.Join(actions, ",") != "accept,accept" {
		t.Errorf("the server saw %d calls and answers %v; want 1 call and two accepts", calls, actions)
	}
}

// TestHandshakeDeadline: nobody answers in time, so the question is
// cancelled towards the server, as the spec's cancel says, and the round
// shows expired.
func TestHandshakeDeadline(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	old := newOldServer(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo[2025-11-25]=" + old.URL, "HELD_TIMEOUT": "1s"}, nil)
	c := newClient(t, db)

	call := c.startCall(inst.URL, "ask_twice", `{}`)
	done := c.waitFor(inst.URL, call.ID, 15*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "No name: cancel" {
		t.Fatalf("call = %+v", done)
	}
	if _, actions := old.seen(); strings.Join(actions, ",") != "cancel" {
		t.Errorf("the server was told %v, want cancel", actions)
	}
	status, page := c.do("GET", inst.URL+"/api/v1/calls/"+call.ID, "", "")
	if status != http.StatusOK {
		t.Fatal(status)
	}
	_ = page
	if got := roundStatus(t, db, call.ID, 1); got != "expired" {
		t.Errorf("round 1 is %s, want expired", got)
	}
	if status, _ := c.answer(inst.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Late"}}}`); status != http.StatusConflict {
		t.Errorf("a late answer: %d, want 409", status)
	}
}

// TestHandshakeURLCompletion: the server's notifications/elicitation/complete
// marks the URL step finished on the round.
func TestHandshakeURLCompletion(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	old := newOldServer(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo[2025-11-25]=" + old.URL}, nil)
	c := newClient(t, db)

	call := c.startCall(inst.URL, "connect", `{}`)
	round := c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
	if !strings.Contains(string(round.Round.InputRequests["elicitation"]), `"elicitationId":"el-42"`) {
		t.Fatalf("round = %s", round.Round.InputRequests["elicitation"])
	}
	if status, body := c.answer(inst.URL, call.ID, 1, `{"elicitation":{"action":"accept"}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if resultText(t, done.Result) != "connect: accept" {
		t.Fatalf("call = %+v", done)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var completed bool
	if err := conn.QueryRow(ctx, `select url_completed_at is not null from rounds where call_id = $1 and seq = 1`, call.ID).Scan(&completed); err != nil {
		t.Fatal(err)
	}
	if !completed {
		t.Error("the completion notification did not reach the round")
	}
}

// TestHandshakeHolderDies: the instance holding the session is killed. The
// call ends failed with a message that says so, and the server is not
// called a second time.
func TestHandshakeHolderDies(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the rescue")
	}
	t.Parallel()
	db := newDatabase(t)
	old := newOldServer(t)
	servers := "demo[2025-11-25]=" + old.URL
	addr := freeAddr(t)
	proc := exec.Command(os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), "ROUNDS_TEST_INSTANCE=1", "DATABASE_URL="+db, "ADMIN_PASSWORD="+adminPassword,
		"LISTEN_ADDR="+addr, "MCP_SERVERS="+servers)
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	holder := "http://" + addr
	waitReady(t, holder)
	c := newClient(t, db)
	call := c.startCall(holder, "ask_twice", `{}`)
	c.waitFor(holder, call.ID, 10*time.Second, roundIs(1))
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()

	other := startInstance(t, db, map[string]string{"MCP_SERVERS": servers}, nil)
	done := c.waitFor(other.URL, call.ID, time.Minute, isDone)
	if done.Status != "failed" || done.Error == nil || !strings.Contains(done.Error.Message, "session") {
		t.Fatalf("call = %+v", done)
	}
	if calls, _ := old.seen(); calls != 1 {
		t.Errorf("the server was called %d times, want once", calls)
	}
}

func roundStatus(t *testing.T, db, callID string, seq int) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var status string
	if err := conn.QueryRow(ctx, `select status from rounds where call_id = $1 and seq = $2`, callID, seq).Scan(&status); err != nil {
		t.Fatal(fmt.Errorf("round %d: %w", seq, err))
	}
	return status
}

func roundHeld(t *testing.T, db, callID string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var held bool
	if err := conn.QueryRow(ctx, `select held_by is not null from rounds where call_id = $1 and seq = 1`, callID).Scan(&held); err != nil {
		t.Fatal(err)
	}
	return held
}
