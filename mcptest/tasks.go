package mcptest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Tasker is a 2026-07-28 server of the tasks extension
// (io.modelcontextprotocol/tasks), written from the extension's text: it
// answers a tool call that declares the extension with a task handle, and
// -32021 to one that does not; it answers tasks/get, tasks/update and
// tasks/cancel only with the Mcp-Name header naming the task, and -32602
// for a task it does not know (or no longer: Expire). Its tools:
//
//   - deploy: works two polls ("Building 1 of 2", "Building 2 of 2"),
//     then waits on one question (key "approve-1"), sent again on every
//     poll until answered, then works on with a longer pollIntervalMs
//     ("Deploying") and completes: "Deployed build 42." or, declined,
//     "Deployment cancelled.".
//   - plan_deploy: first asks which environment as an ordinary 2026-07-28
//     round (with a requestState), then runs deploy's task for it.
//   - flaky_build: works one poll, then fails with a JSON-RPC error.
//   - long_job: works until stopped (tasks/cancel), saying its step; with
//     FinishOnCancel it completes instead ("Finished before the stop").
//   - endless: never ends, and says so with a new statusMessage on every
//     poll ("Working, poll 3"); it has no ttlMs, and tasks/cancel leaves
//     it working, as the extension allows. A server that answers every
//     call with such a task is what TASK_WORKERS, maxTasks and
//     TASK_MAX_LIFETIME are for.
//   - steady: never ends either, saying the same ("Working.") on every
//     poll, with a ttlMs and a createdAt to the nanosecond.
//
// SlowGets makes tasks/get take a while, as a loaded server's does.
//
// Steps advance on polls, not on time, so a test at human speed decides
// when a person answers and the task waits for them.
type Tasker struct {
	URL  string // the /mcp endpoint
	poll time.Duration

	mu         sync.Mutex
	tasks      map[string]*fakeTask
	finish     bool // a stopped long_job completes all the same
	exchanges  []Exchange
	violations []string
	// getDelay is how long tasks/get takes; getting counts those under
	// way, mostGetting the most ever at once.
	getDelay    time.Duration
	getting     int
	mostGetting int
}

type fakeTask struct {
	id, tool  string
	env       string // plan_deploy's answer
	noTTL     bool   // the task has no ttlMs
	step      int
	status    string
	message   string
	poll      time.Duration
	asked     string // the outstanding question's key, if any
	answers   map[string]json.RawMessage
	result    string
	err       string
	created   time.Time
	polled    []time.Time     // each tasks/get, when received
	askedPoll []string        // the question each poll carried
	pollSaid  []time.Duration // the pollIntervalMs each poll answered
}

// NewTasker starts a task server whose tasks ask to be polled every poll.
func NewTasker(tb testing.TB, poll time.Duration) *Tasker {
	tb.Helper()
	t := &Tasker{poll: poll, tasks: map[string]*fakeTask{}}
	srv := httptest.NewServer(t)
	tb.Cleanup(srv.Close)
	t.URL = srv.URL + "/mcp"
	return t
}

// FinishOnCancel makes a stopped long_job complete all the same, as a
// task whose work ended before the stop took effect.
func (s *Tasker) FinishOnCancel() {
	s.mu.Lock()
	s.finish = true
	s.mu.Unlock()
}

// SlowGets makes every tasks/get take d before it is answered.
func (s *Tasker) SlowGets(d time.Duration) {
	s.mu.Lock()
	s.getDelay = d
	s.mu.Unlock()
}

// MostGetting is the most tasks/get requests ever under way at once.
func (s *Tasker) MostGetting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mostGetting
}

// Getting is how many tasks/get requests are under way now.
func (s *Tasker) Getting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getting
}

// Expire forgets every task, as a server does after their TTL.
func (s *Tasker) Expire() {
	s.mu.Lock()
	s.tasks = map[string]*fakeTask{}
	s.mu.Unlock()
}

// Violations lists what a client sent against the extension's rules.
func (s *Tasker) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// Exchanges returns every request received.
func (s *Tasker) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exchange(nil), s.exchanges...)
}

// Count counts the requests of a JSON-RPC method.
func (s *Tasker) Count(method string) int {
	n := 0
	for _, e := range s.Exchanges() {
		if e.RPC == method {
			n++
		}
	}
	return n
}

// Poll is one tasks/get a task received: when, the question it answered
// with ("" for none), and the pollIntervalMs it said.
type Poll struct {
	At    time.Time
	Asked string
	Every time.Duration
}

// Started counts the tasks of tool the server started.
func (s *Tasker) Started(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.tasks {
		if t.tool == tool {
			n++
		}
	}
	return n
}

// Polls returns the tasks/get requests of the only task of tool.
func (s *Tasker) Polls(tool string) []Poll {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Poll
	for _, t := range s.tasks {
		if t.tool == tool {
			for i := range t.polled {
				out = append(out, Poll{At: t.polled[i], Asked: t.askedPoll[i], Every: t.pollSaid[i]})
			}
		}
	}
	return out
}

// TaskIDs returns the id of every task the server made.
func (s *Tasker) TaskIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id := range s.tasks {
		out = append(out, id)
	}
	return out
}

// Status returns the status of the only task of tool, or "".
func (s *Tasker) Status(tool string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tasks {
		if t.tool == tool {
			return t.status
		}
	}
	return ""
}

func (s *Tasker) violate(format string, args ...any) {
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

const taskerTools = `{"tools":[` +
	`{"name":"deploy","title":"Deploy build 42","description":"Builds, asks for a go-ahead, deploys.","inputSchema":{"type":"object","properties":{}},"execution":{"taskSupport":"required"}},` +
	`{"name":"plan_deploy","title":"Plan a deployment","inputSchema":{"type":"object","properties":{}},"execution":{"taskSupport":"required"}},` +
	`{"name":"flaky_build","title":"A build that breaks","inputSchema":{"type":"object","properties":{}},"execution":{"taskSupport":"required"}},` +
	`{"name":"long_job","title":"A long job","inputSchema":{"type":"object","properties":{}},"execution":{"taskSupport":"required"}},` +
	`{"name":"endless","title":"A job that never ends","inputSchema":{"type":"object","properties":{}},"execution":{"taskSupport":"required"}},` +
	`{"name":"steady","title":"A job that always says the same","inputSchema":{"type":"object","properties":{}},"execution":{"taskSupport":"required"}}` +
	`],"resultType":"complete"}`

func (s *Tasker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg rpcMessage
	_ = json.Unmarshal(body, &msg)
	if msg.Method == "tasks/get" {
		s.slowGet(r)
		defer func() { s.mu.Lock(); s.getting--; s.mu.Unlock() }()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exchanges = append(s.exchanges, Exchange{Method: r.Method, Header: r.Header.Clone(), Body: body, RPC: msg.Method})
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get("Mcp-Method") != msg.Method {
		s.violate("%s: Mcp-Method %q", msg.Method, r.Header.Get("Mcp-Method"))
	}
	var p taskerParams
	_ = json.Unmarshal(msg.Params, &p)
	_, declared := p.Meta.Caps.Extensions["io.modelcontextprotocol/tasks"]
	rp := taskerReply{w: w, id: msg.ID}
	switch msg.Method {
	case "server/discover":
		rp.result(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"serverInfo":{"name":"tasker","version":"1"},"resultType":"complete"}`)
	case "tools/list":
		rp.result(taskerTools)
	case "tools/call", "tasks/get", "tasks/update", "tasks/cancel":
		if !declared {
			rp.fail(-32021, "Missing required client capability", `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`)
			return
		}
		if msg.Method == "tools/call" {
			s.callTool(rp, p)
			return
		}
		if r.Header.Get("Mcp-Name") != p.TaskID {
			s.violate("%s: Mcp-Name %q, taskId %q", msg.Method, r.Header.Get("Mcp-Name"), p.TaskID)
		}
		s.taskMethod(rp, msg.Method, p)
	default:
		rp.fail(-32601, "Method not found", "")
	}
}

// taskerParams are the params of every request the Tasker takes.
type taskerParams struct {
	Meta struct {
		Caps struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
	Name           string                     `json:"name"`
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   *string                    `json:"requestState"`
}

// taskerReply answers one JSON-RPC request.
type taskerReply struct {
	w  http.ResponseWriter
	id json.RawMessage
}

func (rp taskerReply) result(result string) {
	writeJSON(rp.w, http.StatusOK, []byte(`{"jsonrpc":"2.0","id":`+string(rp.id)+`,"result":`+result+`}`))
}

func (rp taskerReply) fail(code int, message, data string) {
	e := `{"code":` + strconv.Itoa(code) + `,"message":` + strconv.Quote(message)
	if data != "" {
		e += `,"data":` + data
	}
	writeJSON(rp.w, http.StatusOK, []byte(`{"jsonrpc":"2.0","id":`+string(rp.id)+`,"error":`+e+`}}`))
}

// callTool answers tools/call with a task, after an ordinary round first
// for plan_deploy.
func (s *Tasker) callTool(rp taskerReply, p taskerParams) {
	env := ""
	if p.Name == "plan_deploy" {
		if p.RequestState == nil || *p.RequestState != "plan-1" {
			rp.result(`{"resultType":"input_required","inputRequests":{"env":{"method":"elicitation/create","params":{"mode":"form","message":"Where to?","requestedSchema":{"type":"object","properties":{"env":{"type":"string","enum":["staging","production"]}},"required":["env"]}}}},"requestState":"plan-1"}`)
			return
		}
		var a struct {
			Content struct {
				Env string `json:"env"`
			} `json:"content"`
		}
		_ = json.Unmarshal(p.InputResponses["env"], &a)
		env = a.Content.Env
	}
	switch p.Name {
	case "deploy", "plan_deploy", "flaky_build", "long_job", "endless", "steady":
	default:
		rp.fail(-32602, "Unknown tool: "+p.Name, "")
		return
	}
	t := s.newTask(p.Name, env)
	rp.result(`{"resultType":"task",` + t.fields() + `}`)
}

// taskMethod answers tasks/get, tasks/update and tasks/cancel.
func (s *Tasker) taskMethod(rp taskerReply, method string, p taskerParams) {
	t := s.tasks[p.TaskID]
	if t == nil {
		rp.fail(-32602, "Failed to retrieve task: Task not found", "")
		return
	}
	switch method {
	case "tasks/get":
		s.advance(t)
		t.polled = append(t.polled, time.Now())
		t.askedPoll = append(t.askedPoll, t.asked)
		t.pollSaid = append(t.pollSaid, t.poll)
		rp.result(`{"resultType":"complete",` + t.fields() + `}`)
	case "tasks/update":
		for k, v := range p.InputResponses {
			if k == t.asked { // others are ignored, as the extension says
				t.answers[k] = v
				t.asked = ""
				t.status, t.message = "working", "Thank you."
			}
		}
		rp.result(`{"resultType":"complete"}`)
	case "tasks/cancel":
		if t.tool == "long_job" && s.finish {
			t.status, t.message, t.result = "completed", "", "Finished before the stop."
		} else if t.tool == "endless" {
			// It goes on: a server need not stop.
		} else if t.status == "working" || t.status == "input_required" {
			t.status, t.message = "cancelled", "Stopped at the client's request."
		}
		rp.result(`{"resultType":"complete"}`)
	}
}

func (s *Tasker) newTask(tool, env string) *fakeTask {
	var b [16]byte
	_, _ = rand.Read(b[:])
	t := &fakeTask{id: hex.EncodeToString(b[:]), tool: tool, env: env, status: "working", message: "Queued.",
		poll: s.poll, answers: map[string]json.RawMessage{}, created: time.Now().UTC(), noTTL: tool == "endless"}
	s.tasks[t.id] = t
	return t
}

// advance moves a task one step, on a poll.
func (s *Tasker) advance(t *fakeTask) {
	if t.status != "working" {
		return
	}
	t.step++
	switch t.tool {
	case "deploy", "plan_deploy":
		switch {
		case t.step <= 2:
			t.message = fmt.Sprintf("Building %d of 2", t.step)
		case t.answers["approve-1"] == nil:
			t.status, t.asked, t.message = "input_required", "approve-1", "Waiting for a go-ahead."
		case t.result == "" && t.poll == s.poll:
			// The go-ahead given: deploying is slower to watch.
			t.poll, t.message = 2*s.poll, "Deploying"
		default:
			var a struct {
				Action  string `json:"action"`
				Content struct {
					Confirm bool `json:"confirm"`
				} `json:"content"`
			}
			_ = json.Unmarshal(t.answers["approve-1"], &a)
			t.status, t.message, t.result = "completed", "", "Deployment cancelled."
			if a.Action == "accept" && a.Content.Confirm {
				t.result = "Deployed build 42."
				if t.env != "" {
					t.result = "Deployed build 42 to " + t.env + "."
				}
			}
		}
	case "flaky_build":
		if t.step == 1 {
			t.message = "Building"
			return
		}
		t.status, t.message, t.err = "failed", "Tool execution failed: API rate limit exceeded", "API rate limit exceeded"
	case "long_job":
		t.message = fmt.Sprintf("Step %d", t.step)
	case "endless":
		t.message = fmt.Sprintf("Working, poll %d", t.step)
	case "steady":
		t.message = "Working."
	}
}

// slowGet holds a tasks/get for the delay set, counting it as under way.
func (s *Tasker) slowGet(r *http.Request) {
	s.mu.Lock()
	s.getting++
	s.mostGetting = max(s.mostGetting, s.getting)
	d := s.getDelay
	s.mu.Unlock()
	if d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
	}
}

// fields is the task as the extension writes it, without resultType.
func (t *fakeTask) fields() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, `"taskId":%q,"status":%q`, t.id, t.status)
	if t.message != "" {
		fmt.Fprintf(&b, `,"statusMessage":%s`, strconv.Quote(t.message))
	}
	fmt.Fprintf(&b, `,"createdAt":%q,"lastUpdatedAt":%q`, t.created.Format(time.RFC3339Nano), time.Now().UTC().Format(time.RFC3339Nano))
	if !t.noTTL {
		b.WriteString(`,"ttlMs":3600000`)
	}
	fmt.Fprintf(&b, `,"pollIntervalMs":%d`, t.poll.Milliseconds())
	switch t.status {
	case "input_required":
		b.WriteString(`,"inputRequests":{"approve-1":{"method":"elicitation/create","params":{"mode":"form","message":"Deploy build 42 to production? <b>not bold</b>","requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean","title":"Go ahead"}},"required":["confirm"]}}}}`)
	case "completed":
		fmt.Fprintf(&b, `,"result":{"content":[{"type":"text","text":%s}],"isError":false}`, strconv.Quote(t.result))
	case "failed":
		fmt.Fprintf(&b, `,"error":{"code":-32603,"message":%s}`, strconv.Quote(t.err))
	}
	return b.String()
}
