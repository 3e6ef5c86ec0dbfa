package journeys

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/mcp-rounds/rounds/mcptest"
)

// rawCall is a call as the API sends it, with the round's inputRequests
// as raw bytes, so their order can be checked.
type rawCall struct {
	Status          string `json:"status"`
	AsksOverSession bool   `json:"asksOverSession"`
	Protocol        string `json:"protocol"`
	Round           *struct {
		Seq           int             `json:"seq"`
		InputRequests json.RawMessage `json:"inputRequests"`
	} `json:"round"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (c *client) rawCall(base, id string) rawCall {
	c.t.Helper()
	status, b := c.do("GET", base+"/api/v1/calls/"+id, "", "")
	if status != http.StatusOK {
		c.t.Fatalf("get call: %d %s", status, b)
	}
	var out rawCall
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *client) startWith(base, body string) apiCall {
	c.t.Helper()
	status, b := c.do("POST", base+"/api/v1/calls", "application/json", body)
	if status != http.StatusCreated {
		c.t.Fatalf("start %s: %d %s", body, status, b)
	}
	var call apiCall
	if err := json.Unmarshal(b, &call); err != nil {
		c.t.Fatal(err)
	}
	return call
}

func noViolations(t *testing.T, f *mcptest.Fake) {
	t.Helper()
	if v := f.Violations(); len(v) > 0 {
		t.Errorf("Rounds sent what the real client never did: %v", v)
	}
}

// lastCallSession says whether the latest tools/call of tool went over a
// session.
func lastCallSession(f *mcptest.Fake, tool string) (bool, bool) {
	found, session := false, false
	for _, e := range f.Exchanges() {
		if e.RPC == "tools/call" && strings.Contains(string(e.Body), `"name":"`+tool+`"`) {
			found, session = true, e.Session != ""
		}
	}
	return found, session
}

// TestFastMCPAuto drives FastMCP 4 under auto, on two instances: a
// ctx.elicit tool fails on 2026-07-28 and the call says it asks over a
// session; its next call goes over one, with the dataclass's fields in
// order, and the answer given late on the other instance lands. The admin
// page shows what was learnt and forgets it. A batched round keeps the
// server's question order on the page and the API.
func TestFastMCPAuto(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	fake := mcptest.NewFake(t, mcptest.FastMCP4)
	env := lateEnv("demo=" + fake.URL)
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	first := c.startCall(a.URL, "collect_user_info", `{}`)
	done := c.waitFor(b.URL, first.ID, 10*time.Second, isDone)
	if done.Status != "complete" || !strings.Contains(resultText(t, done.Result), "unavailable on 2026-07-28") {
		t.Fatalf("first call = %+v", done)
	}
	if raw := c.rawCall(b.URL, first.ID); !raw.AsksOverSession {
		t.Errorf("the call JSON does not say the tool asks over a session: %+v", raw)
	}

	second := c.startCall(b.URL, "collect_user_info", `{}`)
	c.waitFor(a.URL, second.ID, 10*time.Second, roundIs(1))
	raw := c.rawCall(a.URL, second.ID)
	if raw.Protocol != "2025-11-25" {
		t.Errorf("the second call's protocol = %q, want 2025-11-25", raw.Protocol)
	}
	if !strings.Contains(string(raw.Round.InputRequests), `"properties":{"name":{"title":"Name","type":"string"},"age":{"title":"Age","type":"integer"}}`) {
		t.Errorf("schema not as the server sent it: %s", raw.Round.InputRequests)
	}
	if found, session := lastCallSession(fake, "collect_user_info"); !found || !session {
		t.Error("the second call did not go over a session")
	}
	time.Sleep(humanPause)
	if status, body := c.answer(a.URL, second.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Ada","age":36}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done = c.waitFor(b.URL, second.ID, 10*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Hello Ada, you are 36 years old" {
		t.Fatalf("second call = %+v", done)
	}

	// What was learnt, on the admin page; then forgotten.
	c.login(a.URL, "admin", adminPassword)
	page := c.page(a.URL + "/admin/servers/demo")
	if page.Find(`[data-testid="learnt-tool"][data-tool="collect_user_info"]`).Length() != 1 {
		t.Fatalf("the admin page does not show the learnt tool:\n%s", page.Find(`[data-testid="learnt"]`).Text())
	}
	if status, _ := c.post(b.URL+"/admin/servers/demo/learnt/forget", url.Values{"tool": {"collect_user_info"}}); status != http.StatusSeeOther {
		t.Fatalf("forget: %d", status)
	}
	if c.page(a.URL+"/admin/servers/demo").Find(`[data-testid="learnt-tool"]`).Length() != 0 {
		t.Error("still learnt after forgetting")
	}
	third := c.startCall(a.URL, "collect_user_info", `{}`)
	c.waitFor(a.URL, third.ID, 10*time.Second, isDone)
	if _, session := lastCallSession(fake, "collect_user_info"); session {
		t.Error("after forgetting, the tool still went over a session")
	}

	// The untitled multi-select, over a session asked for through the API.
	tags := c.startWith(b.URL, `{"server":"demo","tool":"select_tags","arguments":{},"protocol":"2025-11-25"}`)
	round := c.waitFor(a.URL, tags.ID, 10*time.Second, roundIs(1))
	if !strings.Contains(string(round.Round.InputRequests["elicitation"]), `"items":{"enum":["bug","feature","documentation"]}`) {
		t.Errorf("multi-select = %s", round.Round.InputRequests["elicitation"])
	}
	if status, body := c.answer(b.URL, tags.ID, 1, `{"elicitation":{"action":"accept","content":{"value":["bug","documentation"]}}}`); status != http.StatusAccepted {
		t.Fatalf("answer tags: %d %s", status, body)
	}
	if done := c.waitFor(a.URL, tags.ID, 10*time.Second, isDone); resultText(t, done.Result) != "Selected tags: bug, documentation" {
		t.Errorf("tags = %+v", done)
	}

	// Three questions in one round, in the server's order.
	batch := c.startCall(a.URL, "book_trip_batched", `{}`)
	c.waitFor(b.URL, batch.ID, 10*time.Second, roundIs(1))
	raw = c.rawCall(b.URL, batch.ID)
	d, tr, cb := strings.Index(string(raw.Round.InputRequests), `"destination"`), strings.Index(string(raw.Round.InputRequests), `"travellers"`), strings.Index(string(raw.Round.InputRequests), `"cabin"`)
	if d < 0 || !(d < tr && tr < cb) {
		t.Errorf("inputRequests not in the server's order: %s", raw.Round.InputRequests)
	}
	var keys []string
	c.page(b.URL + "/calls/" + batch.ID).Find(`[data-testid="question"]`).Each(func(_ int, s *goquery.Selection) {
		keys = append(keys, s.AttrOr("data-key", ""))
	})
	if strings.Join(keys, ",") != "destination,travellers,cabin" {
		t.Errorf("the page shows the questions as %v", keys)
	}

	// A dataclass in a 2026-07-28 round, answered through the page's form
	// on the other instance: its fields reach the server in the schema's
	// order, the integer as a number.
	info := c.startWith(a.URL, `{"server":"demo","tool":"seed_types_modern","arguments":{"kind":"dataclass"}}`)
	c.waitFor(b.URL, info.ID, 10*time.Second, roundIs(1))
	if !strings.Contains(string(c.rawCall(b.URL, info.ID).Round.InputRequests), `"properties":{"name":{"title":"Name","type":"string"},"age":{"title":"Age","type":"integer"}}`) {
		t.Errorf("the dataclass's schema not as the server sent it")
	}
	if status, body := c.post(b.URL+"/calls/"+info.ID+"/rounds/1", url.Values{"q0$action": {"accept"}, "q0.age": {"36"}, "q0.name": {"Ada"}}); status != http.StatusSeeOther {
		t.Fatalf("answer the form: %d %s", status, body)
	}
	if done := c.waitFor(a.URL, info.ID, 10*time.Second, isDone); resultText(t, done.Result) != "Hello Ada, you are 36 years old" {
		t.Errorf("dataclass call = %+v", done)
	}
	if body := lastToolsCall(fake, "seed_types_modern"); !strings.Contains(body, `"inputResponses":{"user_info":{"action":"accept","content":{"name":"Ada","age":36}}}`) {
		t.Errorf("the answer reached the server as %s, want name before age", body)
	}
	noViolations(t, fake)
}

// TestPythonSDK2Auto: mcp 2.0's HTTP 400 "no back-channel" is shown as
// what the server said, the call offers to start again over a session, and
// starting it again from the page asks over one.
func TestPythonSDK2Auto(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	fake := mcptest.NewFake(t, mcptest.PythonSDK2)
	env := map[string]string{"MCP_SERVERS": "demo=" + fake.URL}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	call := c.startCall(a.URL, "delete_file", `{"filename":"notes.txt"}`)
	done := c.waitFor(b.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "failed" || done.Error == nil {
		t.Fatalf("call = %+v", done)
	}
	msg := done.Error.Message
	if strings.Contains(msg, "could not be reached") || !strings.Contains(msg, "2025-11-25 session") ||
		!strings.Contains(msg, "Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests.") {
		t.Errorf("error = %q", msg)
	}
	c.login(b.URL, "admin", adminPassword)
	page := c.page(b.URL + "/calls/" + call.ID)
	if page.Find(`[data-testid="session-offer"]`).Length() != 1 {
		t.Fatal("the call page does not offer to start again over a session")
	}
	status, _ := c.post(a.URL+"/calls/"+call.ID+"/again", url.Values{})
	if status != http.StatusSeeOther {
		t.Fatalf("start again: %d", status)
	}
	again := c.lastLocation()
	if again == "" || again == call.ID {
		t.Fatalf("start again went to %q, want a new call", again)
	}
	c.waitFor(b.URL, again, 10*time.Second, roundIs(1))
	if status, body := c.answer(b.URL, again, 1, `{"elicitation":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	if done := c.waitFor(a.URL, again, 10*time.Second, isDone); resultText(t, done.Result) != "Deleted 'notes.txt'." {
		t.Errorf("again = %+v", done)
	}
	if fake.Calls("delete_file") != 2 {
		t.Errorf("the server got %d calls, want 2 (the person chose to start again)", fake.Calls("delete_file"))
	}
	noViolations(t, fake)
}

// TestPythonSDK1: mcp 1.29.0 under auto falls back to the handshake and
// its question is answered late on the other instance; a server pinned to
// 2025-11-25 is never asked server/discover, for listing either.
func TestPythonSDK1(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	old := mcptest.NewFake(t, mcptest.PythonSDK1)
	pinned := mcptest.NewFake(t, mcptest.FastMCP4)
	env := lateEnv("demo=" + old.URL + ",pinned[2025-11-25]=" + pinned.URL)
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	call := c.startCall(a.URL, "delete_file", `{"filename":"notes & <drafts>.txt"}`)
	c.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))
	// The question as the server wrote it, byte for byte.
	if raw := c.rawCall(b.URL, call.ID); !strings.Contains(string(raw.Round.InputRequests), `{"mode":"form","message":"Really delete 'notes & <drafts>.txt'?","requestedSchema":{"properties":{"confirm":`) {
		t.Errorf("round = %s", raw.Round.InputRequests)
	}
	time.Sleep(humanPause)
	if status, body := c.answer(b.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	if done := c.waitFor(a.URL, call.ID, 10*time.Second, isDone); resultText(t, done.Result) != "Deleted 'notes & <drafts>.txt'." {
		t.Fatalf("call = %+v", done)
	}
	noViolations(t, old)

	name := c.startWith(b.URL, `{"server":"pinned","tool":"get_user_name","arguments":{}}`)
	c.waitFor(a.URL, name.ID, 10*time.Second, roundIs(1))
	if status, body := c.answer(a.URL, name.ID, 1, `{"elicitation":{"action":"accept","content":{"value":"Ada"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	if done := c.waitFor(b.URL, name.ID, 10*time.Second, isDone); resultText(t, done.Result) != "Hello, Ada!" {
		t.Fatalf("call = %+v", done)
	}
	for _, e := range pinned.Exchanges() {
		if e.RPC == "server/discover" || e.Header.Get("Mcp-Protocol-Version") == "2026-07-28" {
			t.Errorf("a server pinned to 2025-11-25 got a 2026-07-28 request: %s %s", e.RPC, e.Body)
		}
	}
	noViolations(t, pinned)
}

// lastLocation is the call id the client's last response redirected to.
func (c *client) lastLocation() string {
	c.mu.Lock()
	last := c.bodies[len(c.bodies)-1]
	c.mu.Unlock()
	for _, line := range strings.Split(last, "\n") {
		if loc, ok := strings.CutPrefix(strings.TrimSpace(line), "Location: /calls/"); ok {
			return loc
		}
	}
	return ""
}
