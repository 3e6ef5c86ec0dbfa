package journeys

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// byteServer is a 2026-07-28 server whose tools send bytes Postgres
// refuses: a NUL (\u0000) in a question's message, a schema, a result or
// an error, or raw bytes that are not UTF-8. Its tool "fine" asks one
// ordinary question and then echoes the answer.
func byteServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name           string          `json:"name"`
				InputResponses json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		ask := func(message, schema string) string {
			return `{"resultType":"input_required","requestState":"s","inputRequests":{"q":{"method":"elicitation/create","params":{"mode":"form","message":` +
				message + `,"requestedSchema":` + schema + `}}}}`
		}
		w.Header().Set("Content-Type", "application/json")
		const schema = `{"type":"object","properties":{"note":{"type":"string"}},"required":["note"]}`
		var result string
		switch {
		case msg.Method == "server/discover":
			result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}`
		case msg.Method == "tools/list":
			var tools []string
			for _, name := range []string{"fine", "nul_message", "nul_schema", "nul_result", "raw_result", "nul_error"} {
				tools = append(tools, `{"name":"`+name+`","inputSchema":{"type":"object","properties":{"note":{"type":"string"}}}}`)
			}
			result = `{"tools":[` + strings.Join(tools, ",") + `]}`
		case msg.Params.Name == "fine" && len(msg.Params.InputResponses) == 0:
			result = ask(`"Any note?"`, schema)
		case msg.Params.Name == "fine":
			result = `{"content":[{"type":"text","text":"got it"}],"structuredContent":{"answers":` + string(msg.Params.InputResponses) + `}}`
		case msg.Params.Name == "nul_message":
			result = ask(`"before\u0000after"`, schema)
		case msg.Params.Name == "nul_schema":
			result = ask(`"Note?"`, `{"type":"object","properties":{"note":{"type":"string","title":"a\u0000b"}}}`)
		case msg.Params.Name == "nul_result":
			result = `{"content":[{"type":"text","text":"x\u0000y"}]}`
		case msg.Params.Name == "raw_result":
			result = "{\"content\":[{\"type\":\"text\",\"text\":\"x\xff\xfey\"}]}"
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"broken\u0000message \u00e9"}}`, msg.ID)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestBytesPostgresRefuses sends NUL characters and bytes that are not
// UTF-8, raw on the wire, from clients and from a server. Clients get a
// 400 or 422 that says what is wrong; a server's call ends with a clear
// error; no page answers 500 and nothing stored before is lost.
func TestBytesPostgresRefuses(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	a := startInstance(t, db, map[string]string{"MCP_SERVERS": "bytes=" + byteServer(t)}, nil)
	c := newClient(t, db)
	c.login(a.URL, "admin", adminPassword)
	start := func(tool, args string) (int, []byte) {
		return c.do("POST", a.URL+"/api/v1/calls", "application/json", `{"server":"bytes","tool":"`+tool+`","arguments":`+args+`}`)
	}
	expect := func(what string, status int, body []byte, want int, words string) {
		t.Helper()
		if status != want || !strings.Contains(string(body), words) {
			t.Errorf("%s: %d %.300s, want %d saying %q", what, status, body, want, words)
		}
	}

	// A call that is waiting, which nothing below may disturb.
	status, b := start("fine", `{"note":"ok"}`)
	if status != http.StatusCreated {
		t.Fatalf("start fine: %d %s", status, b)
	}
	fine := decodeCall(t, b)
	c.waitFor(a.URL, fine.ID, 10*time.Second, roundIs(1))

	// From clients.
	status, b = start("fine", `{"note":"a\u0000b"}`)
	expect("NUL in an argument", status, b, http.StatusUnprocessableEntity, "NUL")
	if status, b = start("fine", `{"note":"C:\\u0000 is text"}`); status != http.StatusCreated {
		t.Errorf("an escaped backslash before u0000: %d %s, want 201", status, b)
	}
	status, b = start("fine", `{"no\u0000te":"x"}`)
	expect("NUL in a key", status, b, http.StatusUnprocessableEntity, "NUL")
	status, b = start("fine", `{"note":"a\ud800b"}`)
	expect("a lone surrogate in an argument", status, b, http.StatusUnprocessableEntity, "surrogate")
	status, b = start("fine", "{\"note\":\"a\xff\xfeb\"}")
	expect("raw invalid UTF-8 in a body", status, b, http.StatusBadRequest, "UTF-8")
	status, b = c.answer(a.URL, fine.ID, 1, `{"q":{"action":"accept","content":{"note":"a\u0000b"}}}`)
	expect("NUL in an answer", status, b, http.StatusUnprocessableEntity, "NUL")
	status, b = c.answer(a.URL, fine.ID, 1, `{"q\u0000":{"action":"accept","content":{"note":"x"}}}`)
	expect("NUL in an answer's key", status, b, http.StatusUnprocessableEntity, "NUL")
	status, b = c.do("GET", a.URL+"/api/v1/calls/%00%ff", "", "")
	expect("%00%ff in an API id", status, b, http.StatusBadRequest, "address")
	status, b = c.do("GET", a.URL+"/calls/%00%ff", "", "")
	expect("%00%ff in a page's id", status, b, http.StatusBadRequest, "address")
	status, b = c.do("GET", a.URL+"/calls/"+fine.ID+"?after_seq=%00", "", "")
	expect("%00 in a query", status, b, http.StatusBadRequest, "address")
	status, b = c.post(a.URL+"/calls/"+fine.ID+"/rounds/1", url.Values{"q.action": {"accept"}, "q.note": {"a\x00b"}})
	expect("NUL in a form field", status, b, http.StatusUnprocessableEntity, "NUL")
	status, b = c.do("POST", a.URL+"/calls/"+fine.ID+"/rounds/1", "application/x-www-form-urlencoded",
		"csrf_token="+url.QueryEscape(c.csrf)+"&q.action=accept&q.note=%ff%fe")
	expect("invalid UTF-8 in a form field", status, b, http.StatusBadRequest, "UTF-8")
	status, b = c.post(a.URL+"/calls/"+fine.ID+"/rounds/1/draft", url.Values{"q.note": {"draft\x00"}})
	expect("NUL in a draft", status, b, http.StatusUnprocessableEntity, "NUL")

	// From the server.
	for tool, words := range map[string]string{
		"nul_message": "NUL character (\\u0000) in its questions", "nul_schema": "NUL character (\\u0000) in its questions",
		"raw_result": "not valid UTF-8 in its result", "nul_error": "brokenmessage é",
	} {
		status, b := start(tool, `{}`)
		if status != http.StatusCreated {
			t.Errorf("start %s: %d %s", tool, status, b)
			continue
		}
		call := c.waitFor(a.URL, decodeCall(t, b).ID, 20*time.Second, isDone)
		if call.Status != "failed" || call.Error == nil || !strings.Contains(call.Error.Message, words) {
			t.Errorf("%s: %s %+v, want failed saying %q", tool, call.Status, call.Error, words)
		}
		if status, page := c.do("GET", a.URL+"/calls/"+call.ID, "", ""); status != http.StatusOK {
			t.Errorf("%s: call page %d %.300s", tool, status, page)
		}
	}
	// A result with a NUL is kept as it came.
	status, b = start("nul_result", `{}`)
	if status != http.StatusCreated {
		t.Fatalf("start nul_result: %d %s", status, b)
	}
	kept := c.waitFor(a.URL, decodeCall(t, b).ID, 20*time.Second, isDone)
	if kept.Status != "complete" || resultText(t, kept.Result) != "x\x00y" {
		t.Errorf("nul_result: %s %s, want complete with the text as sent", kept.Status, kept.Result)
	}
	if status, page := c.do("GET", a.URL+"/calls/"+kept.ID, "", ""); status != http.StatusOK {
		t.Errorf("nul_result: call page %d %.300s", status, page)
	}
	for _, page := range []string{"/", "/inbox", "/admin/calls", "/admin"} {
		if status, body := c.do("GET", a.URL+page, "", ""); status != http.StatusOK {
			t.Errorf("%s: %d %.300s", page, status, body)
		}
	}

	// The waiting call is intact and can still be answered.
	if status, b := c.answer(a.URL, fine.ID, 1, `{"q":{"action":"accept","content":{"note":"still here"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer the waiting call: %d %s", status, b)
	}
	done := c.waitFor(a.URL, fine.ID, 10*time.Second, isDone)
	if done.Status != "complete" || !strings.Contains(string(done.Result), "still here") {
		t.Errorf("the waiting call: %s %s", done.Status, done.Result)
	}
}

// heldByteServer is a handshake-era server holding a session, whose one
// tool "ask" asks one question with params, raw on the wire, on the
// tools/call stream, and finishes with the reply it got as its text. It
// returns its URL and a channel of the replies.
func heldByteServer(t *testing.T, params string) (string, <-chan string) {
	t.Helper()
	got := make(chan string, 1)
	seen := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		event := func(data string) {
			_, _ = fmt.Fprintf(w, "event: message\r\ndata: %s\r\n\r\n", data)
			w.(http.Flusher).Flush()
		}
		stream := func() {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Mcp-Session-Id", "s1")
			w.WriteHeader(http.StatusOK)
		}
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case msg.Method == "initialize":
			stream()
			event(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"protocolVersion":"2025-11-25",` +
				`"capabilities":{"tools":{}},"serverInfo":{"name":"held-bytes","version":"1"}}}`)
		case msg.Method == "tools/list":
			stream()
			event(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}}`)
		case msg.Method == "tools/call":
			stream()
			event(`{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":` + params + `}`)
			select {
			case reply := <-got:
				seen <- reply
				text, _ := json.Marshal(reply)
				event(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":` + string(text) + `}]}}`)
			case <-r.Context().Done():
			}
		case msg.Method == "":
			w.WriteHeader(http.StatusAccepted)
			got <- string(body)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, seen
}

// TestHeldBytesPostgresRefuses: a handshake-era server asks, on the
// session it holds, a question with bytes Postgres refuses (raw on the
// wire) or past the limits. The call ends with a clear error, before
// anything is stored; the server is told no without Postgres's words; the
// person's pages, the history's search among them, answer 200.
func TestHeldBytesPostgresRefuses(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	const schema = `"requestedSchema":{"type":"object","properties":{"note":{"type":"string"}}}`
	cases := map[string]struct{ params, words string }{
		"raw": {"{\"mode\":\"form\",\"message\":\"x\xff\xfey\"," + schema + "}",
			"The call failed: the server sent bytes that are not valid UTF-8 in its questions"},
		"nul": {`{"mode":"form","message":"before\u0000after",` + schema + `}`,
			`The call failed: the server sent a NUL character (\u0000) in its questions`},
		"surrogate": {`{"mode":"form","message":"x\ud800y",` + schema + `}`,
			"The call failed: the server sent half a UTF-16 surrogate pair"},
		"long": {`{"mode":"form","message":"` + strings.Repeat("m", 5<<20) + `",` + schema + `}`,
			`The call failed: the server sent a question ("elicitation") with a message of 5.0 MiB; this client shows at most 16 KiB.`},
	}
	var servers []string
	replies := map[string]<-chan string{}
	for name, tc := range cases {
		url, seen := heldByteServer(t, tc.params)
		servers = append(servers, name+"[2025-11-25]="+url)
		replies[name] = seen
	}
	a := startInstance(t, db, map[string]string{"MCP_SERVERS": strings.Join(servers, ",")}, nil)
	c := newClient(t, db)
	c.login(a.URL, "admin", adminPassword)
	for name, tc := range cases {
		status, b := c.do("POST", a.URL+"/api/v1/calls", "application/json", `{"server":"`+name+`","tool":"ask","arguments":{}}`)
		if status != http.StatusCreated {
			t.Errorf("%s: start: %d %s", name, status, b)
			continue
		}
		call := c.waitFor(a.URL, decodeCall(t, b).ID, 30*time.Second, func(c apiCall) bool { return isDone(c) || c.Status == "input_required" })
		if call.Status != "failed" || call.Error == nil || !strings.Contains(call.Error.Message, tc.words) {
			t.Errorf("%s: %s %+v, want failed saying %q", name, call.Status, call.Error, tc.words)
		}
		if call.Round != nil {
			t.Errorf("%s: a round was stored: %+v", name, call.Round)
		}
		select {
		case reply := <-replies[name]:
			if !strings.Contains(reply, `"error"`) || strings.Contains(reply, "SQLSTATE") {
				t.Errorf("%s: the server was told %s, want an error without Postgres's words", name, reply)
			}
		default:
			t.Errorf("%s: the server was not told no", name)
		}
	}
	for _, page := range []string{"/", "/inbox", "/calls", "/calls?q=after", "/admin/calls", "/admin"} {
		if status, body := c.do("GET", a.URL+page, "", ""); status != http.StatusOK {
			t.Errorf("%s: %d %.300s", page, status, body)
		}
	}
}
