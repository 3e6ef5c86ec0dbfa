package journeys

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// bigServer is a 2026-07-28 server that sends as much as it may: 80 tools
// with long names, titles and descriptions, and a tool "ask" whose round
// has as many questions as a round may, each with the longest message one
// may have. Its tool "huge" asks one question with a 5 MB message.
func bigServer(t *testing.T, longName string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		question := func(message string) string {
			return `{"method":"elicitation/create","params":{"mode":"form","message":` + quote(message) +
				`,"requestedSchema":{"type":"object","properties":{"note":{"type":"string"}}}}}`
		}
		var result string
		switch {
		case msg.Method == "server/discover":
			result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}`
		case msg.Method == "tools/list":
			tools := []string{`{"name":"ask","inputSchema":{"type":"object"}}`, `{"name":"huge","inputSchema":{"type":"object"}}`,
				`{"name":` + quote(longName) + `,"inputSchema":{"type":"object"}}`}
			for i := range 80 {
				tools = append(tools, fmt.Sprintf(`{"name":"tool%d","title":%s,"description":%s,"inputSchema":{"type":"object"}}`,
					i, quote(strings.Repeat("Title ", 2_000)), quote(strings.Repeat("Description ", 2_000))))
			}
			result = `{"tools":[` + strings.Join(tools, ",") + `]}`
		case msg.Params.Name == "huge":
			result = `{"resultType":"input_required","inputRequests":{"q":` + question(strings.Repeat("m", 5<<20)) + `}}`
		default:
			var qs []string
			for i := range 32 {
				qs = append(qs, fmt.Sprintf(`"q%d":%s`, i, question(fmt.Sprintf("Question %d: %s", i, strings.Repeat("long ", 3200)))))
			}
			result = `{"resultType":"input_required","inputRequests":{` + strings.Join(qs, ",") + `}}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestListsStaySmall: a server sends the most it may (a round of 32 16 KiB
// messages, 80 tools with 24 KB descriptions, a tool named at length) and
// a 5 MB message. The 5 MB message ends its call with a clear error; the
// rest is shown whole on the call's page, while the inbox, the home page,
// the history and the admin's lists stay small.
func TestListsStaySmall(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	longName := "tool_" + strings.Repeat("n", 50_000)
	a := startInstance(t, db, map[string]string{"MCP_SERVERS": "big=" + bigServer(t, longName)}, nil)
	c := newClient(t, db)
	c.login(a.URL, "admin", adminPassword)
	start := func(tool string) apiCall {
		t.Helper()
		status, b := c.do("POST", a.URL+"/api/v1/calls", "application/json", `{"server":"big","tool":`+fmt.Sprintf("%q", tool)+`,"arguments":{}}`)
		if status != http.StatusCreated {
			t.Fatalf("start %.20s: %d %.300s", tool, status, b)
		}
		return decodeCall(t, b)
	}
	huge := c.waitFor(a.URL, start("huge").ID, 20*time.Second, isDone)
	if huge.Status != "failed" || huge.Error == nil || !strings.Contains(huge.Error.Message, "a message of 5.0 MiB; this client shows at most 16 KiB") {
		t.Errorf("a 5 MB message: %s %+v, want failed saying why", huge.Status, huge.Error)
	}
	var ids []string
	for range 3 {
		call := start("ask")
		c.waitFor(a.URL, call.ID, 20*time.Second, roundIs(1))
		ids = append(ids, call.ID)
	}
	named := start(longName)
	c.waitFor(a.URL, named.ID, 20*time.Second, roundIs(1))

	const small = 40 << 10 // about 26 KiB for the home page, whatever the server sends
	for _, page := range []string{"/", "/inbox", "/calls", "/admin/calls", "/admin"} {
		status, body := c.do("GET", a.URL+page, "", "")
		if status != http.StatusOK || len(body) > small {
			t.Errorf("%s: %d, %d KiB; want 200 and at most %d KiB", page, status, len(body)>>10, small>>10)
		}
		if page == "/" && !strings.Contains(string(body), "33 more tools on the server") {
			t.Errorf("the home page does not say how many tools it leaves out")
		}
	}
	// The call's page shows every question whole.
	_, body := c.do("GET", a.URL+"/calls/"+ids[0], "", "")
	if n := strings.Count(string(body), strings.Repeat("long ", 3200)); n != 32 {
		t.Errorf("the call page shows %d of the 32 messages whole", n)
	}
}
