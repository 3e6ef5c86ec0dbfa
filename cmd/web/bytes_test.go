package main

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
