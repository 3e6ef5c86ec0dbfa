package journeys

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// needFront skips the test while Rounds does not serve /mcp/{server}: its
// answer to a request without a token names the protected resource
// metadata, where the pages' sign-in answers only 401.
func needFront(t *testing.T, base, server string) {
	t.Helper()
	resp, err := http.Post(base+"/mcp/"+server, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Skipf("Rounds does not serve /mcp/%s yet (%d, no resource_metadata): the front door for agents (package agents, issue #38) is not on this branch",
			server, resp.StatusCode)
	}
}

// TestAgentsThroughRounds points each generation of the TypeScript SDK's
// client at Rounds' /mcp/demo on two instances, with an API token: the
// tools are the server's own, a tool that asks nothing answers at once, the
// agent's elicitation handler answers the server's question, and an agent
// without one waits while the token's owner answers in Rounds, on the other
// instance.
func TestAgentsThroughRounds(t *testing.T) {
	t.Parallel()
	needAgents(t)
	db := newDatabase(t)
	demo := demoServer(t, nil)
	env := map[string]string{"MCP_SERVERS": "demo=" + demo}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	needFront(t, a.URL, "demo")
	c := newClient(t, db)
	ada := &elicitAnswer{Action: "accept", Content: map[string]any{"name": "Ada", "age": 36}}

	for _, script := range []string{agentNext, agentClassic} {
		generation := strings.TrimSuffix(strings.TrimPrefix(script, "agent-"), ".mjs")
		t.Run(generation, func(t *testing.T) {
			t.Parallel()
			t.Run("AsTheServer", func(t *testing.T) {
				t.Parallel()
				direct := nthEvent(t, runAgent(t, script, agentSpec{URL: demo, Steps: []agentStep{listTools()}}), "tools", 0)
				events := runAgent(t, script, agentSpec{URL: a.URL + "/mcp/demo", Token: c.token, Elicit: ada, Steps: []agentStep{
					callTool("current_time", nil),
					callTool("collect_user_info", nil),
					listTools(),
				}})
				if len(eventsOf(events, "result")) < 2 {
					frontGap(t, events)
				}
				if got := resultText(t, nthEvent(t, events, "result", 0).Result); !strings.HasPrefix(got, "The time is ") {
					t.Errorf("current_time = %q", got)
				}
				if got := elicitMessage(t, nthEvent(t, events, "elicitation", 0)); got != "Tell us about yourself." {
					t.Errorf("asked %q", got)
				}
				if got := resultText(t, nthEvent(t, events, "result", 1).Result); got != "Hello, Ada! You are 36." {
					t.Errorf("collect_user_info = %q", got)
				}
				frontGap(t, events)
				sameJSON(t, "tools through Rounds", nthEvent(t, events, "tools", 0).Tools, direct.Tools)
			})
			t.Run("OwnerAnswers", func(t *testing.T) {
				t.Parallel()
				c := c.in(t)
				path := "/srv/" + generation + ".log"
				run := startAgent(t, script, agentSpec{URL: a.URL + "/mcp/demo", Token: c.token, TimeoutMS: 120_000, Steps: []agentStep{
					callTool("confirm_delete", map[string]any{"path": path}),
				}})
				var call apiCall
				err := poll(time.Minute, func() error {
					var ok bool
					if call, ok = c.callAsking(b.URL, path); ok || run.exited() {
						return nil
					}
					return fmt.Errorf("no call waiting asks about %s", path)
				})
				if run.exited() {
					events := run.wait()
					frontGap(t, events)
					t.Fatalf("the agent ended before anyone answered:\n%s", printed(events))
				}
				if err != nil {
					t.Fatal(err)
				}
				if status, body := c.answer(b.URL, call.ID, call.Round.Seq, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
					t.Fatalf("answer on B: %d %s", status, body)
				}
				events := run.wait()
				if got := resultText(t, nthEvent(t, events, "result", 0).Result); got != "Deleted "+path {
					t.Errorf("confirm_delete = %q\n%s", got, printed(events))
				}
				if len(eventsOf(events, "elicitation")) > 0 {
					t.Error("an agent that declared no elicitation was asked")
				}
			})
		})
	}
}

// in returns the client for a subtest: same token and session, failing t.
func (c *client) in(t *testing.T) *client {
	return &client{t: t, token: c.token, csrf: c.csrf, jar: c.jar}
}

// callAsking finds one of the client's calls that waits for an answer to
// a question that mentions needle.
func (c *client) callAsking(base, needle string) (apiCall, bool) {
	c.t.Helper()
	status, body := c.do("GET", base+"/api/v1/calls?status=input_required", "", "")
	if status != http.StatusOK {
		c.t.Fatalf("list calls: %d %s", status, body)
	}
	var page struct {
		Calls []apiCall `json:"calls"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		c.t.Fatal(err)
	}
	for _, listed := range page.Calls {
		status, body := c.do("GET", base+"/api/v1/calls/"+listed.ID, "", "")
		var call apiCall
		if status != http.StatusOK || json.Unmarshal(body, &call) != nil || call.Round == nil {
			continue
		}
		for _, q := range call.Round.InputRequests {
			if strings.Contains(string(q), needle) {
				return call, true
			}
		}
	}
	return apiCall{}, false
}

// frontGap skips the test, naming the gap, when the agent met one of the
// front door's known as of main 6874f1f (2026-12-03).
func frontGap(t *testing.T, events []agentEvent) {
	t.Helper()
	for _, e := range eventsOf(events, "error") {
		switch {
		case strings.Contains(e.Message, "_meta must name"):
			t.Skipf("known gap: Rounds' front door does not answer 2025-11-25's initialize yet: %s", e.Line)
		case strings.Contains(e.Message, "ttlMs"):
			t.Skipf("known gap: the front door's lists have no ttlMs and cacheScope, which 2026-07-28 requires and the v2 client checks: %s", e.Line)
		}
	}
}

// sameJSON fails the test unless got and want are the same JSON value.
func sameJSON(t *testing.T, what string, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differ:\n got %s\nwant %s", what, got, want)
	}
}
