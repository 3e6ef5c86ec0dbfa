package journeys

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// mcpSchema is MCP 2026-07-28's official JSON schema, one definition at a
// time.
type mcpSchema struct {
	t *testing.T
	c *jsonschema.Compiler
}

func loadMCPSchema(t *testing.T) *mcpSchema {
	t.Helper()
	f, err := os.Open("../agents/testdata/mcp-2026-07-28.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mcp.json", doc); err != nil {
		t.Fatal(err)
	}
	return &mcpSchema{t: t, c: c}
}

// result checks that body (a JSON-RPC response, perhaps as events)
// carries a result valid as the schema's definition def, and returns it.
func (s *mcpSchema) result(what, def string, status int, body []byte) map[string]any {
	s.t.Helper()
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if status != http.StatusOK || json.Unmarshal(sseData(body), &msg) != nil || msg.Result == nil {
		s.t.Fatalf("%s: %d %s, want a result", what, status, body)
	}
	sch, err := s.c.Compile("mcp.json#/$defs/" + def)
	if err != nil {
		s.t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(msg.Result))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		s.t.Errorf("%s is not a valid %s: %v\n%s", what, def, err, msg.Result)
	}
	var m map[string]any
	_ = json.Unmarshal(msg.Result, &m)
	return m
}

// TestAgentResultsFollowTheSchema: every kind of result the front door
// gives a 2026-07-28 agent validates against the revision's official
// JSON schema: discover and the lists carry ttlMs and cacheScope
// "private" (what they show depends on who asks), and so does a call's
// outcome; a 2025-11-25 session's lists
// do not (that revision has no such fields).
func TestAgentResultsFollowTheSchema(t *testing.T) {
	t.Parallel()
	s := loadMCPSchema(t)
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "AGENT_WAIT": "2s"}
	a := startInstance(t, db, env, nil)
	token := newToken(t, db, "admin")
	door := a.URL + "/mcp/demo"
	rpc := func(method, params string) (int, []byte) {
		status, _, body := rawRPC(t, door, token, method, params)
		return status, body
	}
	cacheable := func(what string, m map[string]any) {
		t.Helper()
		if m["ttlMs"] != float64(0) || m["cacheScope"] != "private" {
			t.Errorf("%s: ttlMs %v, cacheScope %v; want 0, private", what, m["ttlMs"], m["cacheScope"])
		}
	}
	for _, l := range [][2]string{{"server/discover", "DiscoverResult"}, {"tools/list", "ListToolsResult"},
		{"prompts/list", "ListPromptsResult"}, {"resources/list", "ListResourcesResult"},
		{"resources/templates/list", "ListResourceTemplatesResult"}} {
		status, body := rpc(l[0], "")
		cacheable(l[0], s.result(l[0], l[1], status, body))
	}
	status, body := rpc("tools/call", `{"name":"current_time","arguments":{}}`)
	s.result("current_time", "CallToolResult", status, body)
	status, body = rpc("resources/read", `{"uri":"demo://greetings/Ada"}`)
	// The demo gives its own ttlMs and cacheScope: they pass as it sent them.
	s.result("resources/read", "ReadResourceResult", status, body)

	// A question for the agent: input_required.
	status, _, body = rawRPCWith(t, door, token, "tools/call", `{"name":"confirm_delete","arguments":{"path":"/a"}}`,
		`{"elicitation":{"form":{}}}`)
	if m := s.result("a question for the agent", "InputRequiredResult", status, body); m["resultType"] != "input_required" {
		t.Errorf("a question for the agent: resultType %v", m["resultType"])
	}
	// A question for the owner, past AGENT_WAIT: Rounds' isError result,
	// naming the call, whose outcome is then read.
	status, body = rpc("tools/call", `{"name":"confirm_delete","arguments":{"path":"/b"}}`)
	m := s.result("past AGENT_WAIT", "CallToolResult", status, body)
	if m["isError"] != true {
		t.Errorf("past AGENT_WAIT: %s, want isError", body)
	}
	id := regexp.MustCompile(`rounds://calls/([A-Za-z0-9_-]+)`).FindStringSubmatch(string(body))
	if id == nil {
		t.Fatalf("past AGENT_WAIT: %s names no call", body)
	}
	status, body = rpc("resources/read", `{"uri":"rounds://calls/`+id[1]+`"}`)
	cacheable("the outcome", s.result("the outcome", "ReadResourceResult", status, body))

	// A 2025-11-25 session's list has no ttlMs.
	status, body = sessionList(t, door, token)
	if status != http.StatusOK || !strings.Contains(string(body), `"tools"`) || strings.Contains(string(body), "ttlMs") ||
		strings.Contains(string(body), "cacheScope") {
		t.Errorf("a 2025-11-25 session's tools/list: %d %s, want the tools without ttlMs and cacheScope", status, body)
	}
}

// sessionList begins a 2025-11-25 session at url and lists its tools.
func sessionList(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	post := func(session, body string) (*http.Response, []byte) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp, body = post(id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	return resp.StatusCode, body
}
