package mcptest

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fixtures are the servers' own bodies from recorded traffic, compact
// and with their key order as on the wire.
//
//go:embed testdata/*.json
var fixtures embed.FS

func fixture(name string) []byte {
	b, err := fixtures.ReadFile("testdata/" + name)
	if err != nil {
		panic(err)
	}
	return b
}

// Flavour names a Python MCP server whose wire traffic a Fake reproduces.
type Flavour string

// The servers people run, as recorded talking to Rounds.
const (
	// FastMCP4 is FastMCP 4.0.0b3 (on mcp 2.0.0): 2026-07-28 rounds for
	// tools written for them, ctx.elicit tools only over a 2025-11-25
	// session (on 2026-07-28 they answer isError).
	FastMCP4 Flavour = "fastmcp-4.0.0b3"
	// PythonSDK2 is mcp 2.0.0's MCPServer: on 2026-07-28 a tool that
	// elicits is answered HTTP 400 "no back-channel".
	PythonSDK2 Flavour = "mcp-2.0.0"
	// PythonSDK1 is mcp 1.29.0's FastMCP: handshake era only; it refuses
	// server/discover with HTTP 400 "Missing session ID".
	PythonSDK1 Flavour = "mcp-1.29.0"
)

// Exchange is one HTTP request a Fake received.
type Exchange struct {
	Method  string // HTTP method
	Header  http.Header
	Body    []byte
	RPC     string // the JSON-RPC method; "" for a response of ours
	Session string
}

// Fake is a fake Python MCP server on loopback. It answers as the real one
// did, byte for byte (headers, JSON or SSE with CRLF framing, key order,
// ids, error texts), and notes anything Rounds sends that the real
// server's client traffic never had.
type Fake struct {
	URL     string // the /mcp endpoint
	flavour Flavour
	secret  []byte

	mu         sync.Mutex
	stateTTL   time.Duration // how long a sealed requestState is taken; 0 for ever
	expired    time.Time     // states sealed before it have run out (Expire)
	fares      int           // book_flight's moving fare, when set; 0 when it names none
	exchanges  []Exchange
	violations []string
	sessions   map[string]*pySession
	rateShare  bool // rate_share is listed (ListRateShare)
}

type pySession struct {
	nextID int
	done   chan struct{}
	wait   map[string]chan json.RawMessage // answers to our requests, by id
}

// NewFake starts a fake server of the given flavour for the test.
func NewFake(tb testing.TB, flavour Flavour) *Fake {
	tb.Helper()
	f := &Fake{flavour: flavour, sessions: map[string]*pySession{}, secret: make([]byte, 32)}
	_, _ = rand.Read(f.secret)
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	f.URL = srv.URL + "/mcp"
	return f
}

// SetStateTTL makes the server refuse a requestState sealed longer ago
// than ttl, as mcp 2.0's RequestStateSecurity does (600 s by default).
func (f *Fake) SetStateTTL(ttl time.Duration) {
	f.mu.Lock()
	f.stateTTL = ttl
	f.mu.Unlock()
}

// Expire lets every requestState sealed so far run out now, as its TTL
// would have: the server refuses each as expired, and takes those it seals
// later. A test answers after it as a person would after the TTL, while
// what Rounds sends at once afterwards stays within any TTL.
func (f *Fake) Expire() {
	f.mu.Lock()
	f.expired = time.Now()
	f.mu.Unlock()
}

// Restart gives the server a new sealing key, as a restarted process makes
// one: every requestState sealed before is refused.
func (f *Fake) Restart() {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	f.mu.Lock()
	f.secret = secret
	f.mu.Unlock()
}

// MoveFares makes book_flight's second question name a fare that rises
// each time it is asked, as a tool asking about the world does: asked
// afresh, the question is not the same.
func (f *Fake) MoveFares() {
	f.mu.Lock()
	f.fares = 420
	f.mu.Unlock()
}

// Exchanges returns every request received so far.
func (f *Fake) Exchanges() []Exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Exchange(nil), f.exchanges...)
}

// Violations lists what Rounds sent that the real server's client never did.
func (f *Fake) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

// Calls counts the tools/call requests for tool.
func (f *Fake) Calls(tool string) int {
	n := 0
	for _, e := range f.Exchanges() {
		if e.RPC == "tools/call" && bytes.Contains(e.Body, []byte(`"name":`+strconv.Quote(tool))) {
			n++
		}
	}
	return n
}

func (f *Fake) violate(format string, args ...any) {
	f.mu.Lock()
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg rpcMessage
	_ = json.Unmarshal(body, &msg)
	sid := r.Header.Get("Mcp-Session-Id")
	f.mu.Lock()
	f.exchanges = append(f.exchanges, Exchange{Method: r.Method, Header: r.Header.Clone(), Body: body, RPC: msg.Method, Session: sid})
	s := f.sessions[sid]
	f.mu.Unlock()
	w.Header().Set("Server", "uvicorn")
	if sid != "" {
		if s == nil {
			http.Error(w, "Session not found", http.StatusNotFound)
			return
		}
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "2025-11-25" {
			f.violate("%s in a session with Mcp-Protocol-Version %q", r.Method, v)
		}
		if r.Header.Get("Mcp-Method") != "" {
			f.violate("Mcp-Method header in a 2025-11-25 session")
		}
	}
	switch {
	case r.Method == http.MethodGet && s != nil:
		// The standalone stream: open and silent until the session ends.
		sseStart(w, sid)
		select {
		case <-s.done:
		case <-r.Context().Done():
		}
	case r.Method == http.MethodDelete && s != nil:
		f.mu.Lock()
		delete(f.sessions, sid)
		f.mu.Unlock()
		close(s.done)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", sid)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case msg.Method == "" && s != nil:
		// Our answer to a question asked on the session.
		f.mu.Lock()
		ch := s.wait[string(msg.ID)]
		delete(s.wait, string(msg.ID))
		f.mu.Unlock()
		if ch != nil {
			ch <- body
		}
		accepted(w, sid)
	case strings.HasPrefix(msg.Method, "notifications/"):
		accepted(w, sid)
	case msg.Method == "initialize" && sid == "":
		if r.Header.Get("Mcp-Protocol-Version") != "" || r.Header.Get("Mcp-Method") != "" {
			f.violate("initialize carried Mcp-* headers")
		}
		f.initialize(w, msg)
	case s != nil:
		f.inSession(w, r, s, sid, msg)
	case f.flavour == PythonSDK1:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", newSessionID())
		writeJSON(w, http.StatusBadRequest, fixture("mcp1-missing-session.json"))
	default:
		f.stateless(w, r, msg)
	}
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func accepted(w http.ResponseWriter, sid string) {
	w.Header().Set("Content-Type", "application/json")
	if sid != "" {
		w.Header().Set("Mcp-Session-Id", sid)
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusAccepted)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func envelope(id json.RawMessage, result []byte) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + string(result) + `}`)
}

func sseStart(w http.ResponseWriter, sid string) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Mcp-Session-Id", sid)
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func sseEvent(w http.ResponseWriter, data []byte) {
	_, _ = fmt.Fprintf(w, "event: message\r\ndata: %s\r\n\r\n", data)
	w.(http.Flusher).Flush()
}

func (f *Fake) initialize(w http.ResponseWriter, msg rpcMessage) {
	sid := newSessionID()
	s := &pySession{done: make(chan struct{}), wait: map[string]chan json.RawMessage{}}
	result := fixture("fastmcp-initialize.json")
	switch f.flavour {
	case PythonSDK1:
		result = fixture("mcp1-initialize.json")
	case PythonSDK2:
		result = bytes.Replace(fixture("mcp1-initialize.json"), []byte(`"version":"1.29.0"`), []byte(`"version":""`), 1)
	}
	if f.flavour != FastMCP4 {
		s.nextID = 0 // the Python SDK numbers its requests from 0
	} else {
		s.nextID = 1
	}
	f.mu.Lock()
	f.sessions[sid] = s
	f.mu.Unlock()
	sseStart(w, sid)
	sseEvent(w, envelope(msg.ID, result))
}

// sessionTools are the tools that ask with ctx.elicit, over a session:
// the question's message and schema, as the server writes them.
// rate_share's model has `share: float = Field(ge=0, le=0.5)` and `notes:
// str = Field(json_schema_extra={"format": "multiline"})`, as pydantic
// writes them: a fractional bound, and a format of its own.
var sessionTools = map[string]struct{ message, schema string }{
	"get_user_name":     {"What's your name?", `{"properties":{"value":{"title":"Value","type":"string"}},"required":["value"],"type":"object"}`},
	"collect_user_info": {"Please provide your information", `{"properties":{"name":{"title":"Name","type":"string"},"age":{"title":"Age","type":"integer"}},"required":["name","age"],"title":"UserInfo","type":"object"}`},
	"select_tags":       {"Choose tags", `{"type":"object","properties":{"value":{"type":"array","items":{"enum":["bug","feature","documentation"]}}},"required":["value"]}`},
	"delete_file":       {"Really delete '%s'?", `{"properties":{"confirm":{"description":"Type true to confirm deletion.","title":"Confirm","type":"boolean"}},"required":["confirm"],"title":"ConfirmDeletion","type":"object"}`},
	"rate_share":        {"What share, and why?", `{"properties":{"share":{"maximum":0.5,"minimum":0,"title":"Share","type":"number"},"notes":{"format":"multiline","title":"Notes","type":"string"}},"required":["share","notes"],"title":"Share","type":"object"}`},
}

// rateShareTool is how FastMCP lists rate_share, a tool the recorded list
// lacks (see sessionTools), in the recording's shape.
const rateShareTool = `{"_meta":{"fastmcp":{"tags":[]}},"description":"Asks what share to take, and why.","inputSchema":{"type":"object","additionalProperties":false,"properties":{}},"name":"rate_share","outputSchema":{"properties":{"result":{"type":"string"}},"required":["result"],"type":"object","x-fastmcp-wrap-result":true},"title":"Rate Share"}`

// ListRateShare makes FastMCP's tool lists end with rate_share, which the
// recordings lack (so the replays leave it out).
func (f *Fake) ListRateShare() {
	f.mu.Lock()
	f.rateShare = true
	f.mu.Unlock()
}

func (f *Fake) listsRateShare() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rateShare
}

// withRateShare is FastMCP's recorded tool list with rate_share at its end.
func withRateShare(tools json.RawMessage) json.RawMessage {
	tools = bytes.TrimSpace(tools)
	if len(tools) < 2 || tools[len(tools)-1] != ']' {
		return tools
	}
	return append(append(bytes.Clone(tools[:len(tools)-1]), ","+rateShareTool...), ']')
}

// inSession answers a request on a 2025-11-25 session, on an SSE stream of
// its own that the server closes after the response.
func (f *Fake) inSession(w http.ResponseWriter, r *http.Request, s *pySession, sid string, msg rpcMessage) {
	switch msg.Method {
	case "tools/list":
		result := fixture("mcp1-tools.json")
		if f.flavour == FastMCP4 {
			var list struct{ Tools json.RawMessage }
			_ = json.Unmarshal(fixture("fastmcp-tools.json"), &list)
			if f.listsRateShare() {
				list.Tools = withRateShare(list.Tools)
			}
			result = []byte(`{"tools":` + string(list.Tools) + `}`)
		}
		sseStart(w, sid)
		sseEvent(w, envelope(msg.ID, result))
		return
	case "tools/call":
	default:
		sseStart(w, sid)
		sseEvent(w, []byte(`{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32601,"message":"Method not found"}}`))
		return
	}
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Filename string `json:"filename"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	tool, ok := sessionTools[p.Name]
	if !ok || (f.flavour == FastMCP4) == (p.Name == "delete_file") {
		sseStart(w, sid)
		sseEvent(w, envelope(msg.ID, []byte(`{"content":[{"type":"text","text":"Unknown tool: `+p.Name+`"}],"isError":true}`)))
		return
	}
	message := tool.message
	if p.Name == "delete_file" {
		message = fmt.Sprintf(message, p.Arguments.Filename)
	}
	m := pyString(message)
	f.mu.Lock()
	id := strconv.Itoa(s.nextID)
	s.nextID++
	answer := make(chan json.RawMessage, 1)
	s.wait[id] = answer
	f.mu.Unlock()
	var ask string
	if f.flavour == FastMCP4 {
		ask = `{"jsonrpc":"2.0","id":` + id + `,"method":"elicitation/create","params":{"mode":"form","message":` + string(m) + `,"requestedSchema":` + tool.schema + `,"_meta":{}}}`
	} else {
		ask = `{"method":"elicitation/create","params":{"mode":"form","message":` + string(m) + `,"requestedSchema":` + tool.schema + `},"jsonrpc":"2.0","id":` + id + `}`
	}
	sseStart(w, sid)
	sseEvent(w, []byte(ask))
	var reply []byte
	select {
	case reply = <-answer:
	case <-r.Context().Done():
		return
	case <-s.done:
		return
	}
	sseEvent(w, envelope(msg.ID, f.sessionResult(p.Name, p.Arguments.Filename, reply)))
}

// sessionResult is the tool's result once its question is answered.
func (f *Fake) sessionResult(tool, filename string, reply []byte) []byte {
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(reply, &resp)
	text := func(t string) []byte {
		q := pyString(t)
		if f.flavour == FastMCP4 {
			return []byte(`{"_meta":{"fastmcp":{"wrap_result":true}},"content":[{"text":` + string(q) + `,"type":"text"}],"isError":false,"structuredContent":{"result":` + string(q) + `}}`)
		}
		return []byte(`{"content":[{"type":"text","text":` + string(q) + `}],"structuredContent":{"result":` + string(q) + `},"isError":false}`)
	}
	if resp.Error != nil {
		q := pyString("Error calling tool '" + tool + "': " + resp.Error.Message)
		return []byte(`{"content":[{"text":` + string(q) + `,"type":"text"}],"isError":true}`)
	}
	var a struct {
		Action  string                     `json:"action"`
		Content map[string]json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(resp.Result, &a)
	switch {
	case a.Action == "decline":
		return text("Information not provided")
	case a.Action != "accept":
		return text("Operation cancelled")
	}
	str := func(k string) string {
		var s string
		if json.Unmarshal(a.Content[k], &s) != nil {
			return string(a.Content[k])
		}
		return s
	}
	switch tool {
	case "get_user_name":
		return text("Hello, " + str("value") + "!")
	case "collect_user_info":
		return text("Hello " + str("name") + ", you are " + str("age") + " years old")
	case "rate_share":
		return text("Share " + string(a.Content["share"]) + ": " + str("notes"))
	case "select_tags":
		var tags []string
		_ = json.Unmarshal(a.Content["value"], &tags)
		return text("Selected tags: " + strings.Join(tags, ", "))
	default:
		if string(a.Content["confirm"]) == "true" {
			return text("Deleted '" + filename + "'.")
		}
		return text("Kept '" + filename + "'.")
	}
}
