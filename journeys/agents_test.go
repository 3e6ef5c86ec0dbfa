package journeys

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

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
