package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// deploy_release runs as a task of the tasks extension
// (io.modelcontextprotocol/tasks): its tools/call answers with a task
// handle at once; the client polls tasks/get. The task builds for a few
// seconds (4 unless told), saying its step, then asks whether to deploy
// (key go_ahead), sent on every poll until answered with tasks/update,
// then deploys for half as long and completes. The go-sdk knows nothing
// of tasks, so the demo's handler serves these requests itself.
//
// A task lives in the memory of the process serving the demo, for an
// hour: instances that share a demo server (cmd/demo-mcp, as the compose
// file runs it) share its tasks; each instance's built-in demo has its
// own.

// Names of the tasks extension and its task tool.
const (
	extensionTasks = "io.modelcontextprotocol/tasks"
	deployTool     = "deploy_release"
	taskTTL        = time.Hour
	maxTasks       = 1000
	taskPoll       = 500 * time.Millisecond
	buildSteps     = 4
)

// taskRun is one deploy_release task.
type taskRun struct {
	id, release string
	work        time.Duration // the build's; the deployment takes half
	created     time.Time
	answer      map[string]any // the go_ahead answer, once given
	answered    time.Time
	cancelled   bool
}

// taskTable holds the demo's tasks.
type taskTable struct {
	now   func() time.Time
	mu    sync.Mutex
	tasks map[string]*taskRun
}

func deployRelease() *tool {
	return &tool{
		def: &mcp.Tool{
			Name:  deployTool,
			Title: "Deploy a release",
			Description: "Runs as a task: builds a release for a few seconds (4 unless told), asks whether to deploy it, " +
				"then deploys. Needs the tasks extension.",
		},
		input: mustForm(`{"type":"object","properties":{
			"release":{"type":"string","title":"Release","minLength":1,"maxLength":40,"default":"1.4"},
			"seconds":{"type":"integer","title":"Seconds","description":"How long the build takes","minimum":1,"maximum":60,"default":4}}}`),
		// Reached only by a client that declared no tasks (see serveTasks).
		run: func(_ context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return failed("deploy_release runs as a task: declare the tasks extension (" + extensionTasks + ")."), nil
		},
	}
}

// goAhead is the question the task asks midway.
var goAhead = mustForm(`{"type":"object","properties":{
	"confirm":{"type":"boolean","title":"Deploy it","default":false}},"required":["confirm"]}`)

// serveTasks answers deploy_release's tools/call and the task methods,
// and hands every other request to next (the go-sdk's handler).
func (d *demo) serveTasks(next http.Handler) http.Handler {
	tool := deployRelease()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read the request", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta struct {
					Caps struct {
						Extensions map[string]json.RawMessage `json:"extensions"`
					} `json:"io.modelcontextprotocol/clientCapabilities"`
				} `json:"_meta"`
				Name           string                     `json:"name"`
				Arguments      map[string]any             `json:"arguments"`
				TaskID         string                     `json:"taskId"`
				InputResponses map[string]json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.ID == nil {
			next.ServeHTTP(w, r)
			return
		}
		p := msg.Params
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + `}`))
		}
		fail := func(code int, message, data string) {
			e := `{"code":` + strconv.Itoa(code) + `,"message":` + strconv.Quote(message)
			if data != "" {
				e += `,"data":` + data
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":` + e + `}}`))
		}
		_, declared := p.Meta.Caps.Extensions[extensionTasks]
		switch msg.Method {
		case "tools/call":
			if p.Name != deployTool {
				next.ServeHTTP(w, r)
				return
			}
			if !declared {
				fail(-32021, "Missing required client capability", `{"requiredCapabilities":{"extensions":{"`+extensionTasks+`":{}}}}`)
				return
			}
			args, problem := tool.input.check(p.Arguments)
			if problem != "" {
				reply(`{"resultType":"complete","content":[{"type":"text","text":` + strconv.Quote("Invalid arguments: "+problem) + `}],"isError":true}`)
				return
			}
			t, err := d.tasks.start(args)
			if err != nil {
				fail(-32603, err.Error(), "")
				return
			}
			reply(`{"resultType":"task",` + d.tasks.fields(t) + `}`)
		case "tasks/get", "tasks/update", "tasks/cancel":
			if !declared {
				fail(-32021, "Missing required client capability", `{"requiredCapabilities":{"extensions":{"`+extensionTasks+`":{}}}}`)
				return
			}
			t := d.tasks.get(p.TaskID)
			if t == nil {
				fail(-32602, "Task not found", "")
				return
			}
			switch msg.Method {
			case "tasks/get":
				reply(`{"resultType":"complete",` + d.tasks.fields(t) + `}`)
			case "tasks/update":
				d.tasks.update(t, p.InputResponses)
				reply(`{"resultType":"complete"}`)
			default:
				d.tasks.cancel(t)
				reply(`{"resultType":"complete"}`)
			}
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// start makes a task for deploy_release's arguments.
func (ts *taskTable) start(args map[string]any) (*taskRun, error) {
	seconds, _ := number(args["seconds"])
	release, _ := args["release"].(string)
	var b [16]byte
	_, _ = rand.Read(b[:])
	t := &taskRun{id: hex.EncodeToString(b[:]), release: release, created: ts.now(),
		work: time.Duration(seconds * float64(time.Second))}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for id, old := range ts.tasks {
		if ts.now().Sub(old.created) > taskTTL {
			delete(ts.tasks, id)
		}
	}
	if len(ts.tasks) >= maxTasks {
		return nil, fmt.Errorf("too many tasks at once (%d); try again later", maxTasks)
	}
	ts.tasks[t.id] = t
	return t, nil
}

func (ts *taskTable) get(id string) *taskRun {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.tasks[id]
	if t != nil && ts.now().Sub(t.created) > taskTTL {
		delete(ts.tasks, id)
		return nil
	}
	return t
}

// update takes the answer to the task's question, while it asks it; other
// answers are ignored, as the extension says.
func (ts *taskTable) update(t *taskRun, responses map[string]json.RawMessage) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	status, _, _ := ts.state(t)
	raw, ok := responses["go_ahead"]
	if status != "input_required" || !ok {
		return
	}
	var a struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return
	}
	answer := map[string]any{"action": a.Action}
	if a.Action == "accept" {
		content, problem := goAhead.check(a.Content)
		if problem != "" {
			return // asked again on the next poll
		}
		answer["confirm"] = content["confirm"]
	}
	t.answer, t.answered = answer, ts.now()
}

func (ts *taskTable) cancel(t *taskRun) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if status, _, _ := ts.state(t); status == "working" || status == "input_required" {
		t.cancelled = true
	}
}

// state is where a task stands now: its status, what it says, and its
// result once completed. Called with mu held.
func (ts *taskTable) state(t *taskRun) (status, message, result string) {
	now := ts.now()
	switch built := now.Sub(t.created); {
	case t.cancelled:
		return "cancelled", "Stopped at your request.", ""
	case built < t.work:
		step := 1 + int(built*buildSteps/t.work)
		return "working", fmt.Sprintf("Building release %s: step %d of %d", t.release, step, buildSteps), ""
	case t.answer == nil:
		return "input_required", "Release " + t.release + " is built; waiting for a go-ahead.", ""
	case t.answer["action"] != "accept" || t.answer["confirm"] != true:
		return "completed", "", "Release " + t.release + " was built and not deployed."
	case now.Sub(t.answered) < t.work/2:
		return "working", "Deploying release " + t.release, ""
	default:
		return "completed", "", "Deployed release " + t.release + " to production."
	}
}

// fields is the task as the extension writes it, without resultType.
func (ts *taskTable) fields(t *taskRun) string {
	ts.mu.Lock()
	status, message, result := ts.state(t)
	ts.mu.Unlock()
	var b bytes.Buffer
	fmt.Fprintf(&b, `"taskId":%q,"status":%q`, t.id, status)
	if message != "" {
		fmt.Fprintf(&b, `,"statusMessage":%s`, strconv.Quote(message))
	}
	fmt.Fprintf(&b, `,"createdAt":%q,"lastUpdatedAt":%q,"ttlMs":%d,"pollIntervalMs":%d`,
		t.created.UTC().Format(time.RFC3339Nano), ts.now().UTC().Format(time.RFC3339Nano), taskTTL.Milliseconds(), taskPoll.Milliseconds())
	switch status {
	case "input_required":
		question, _ := json.Marshal(map[string]any{"go_ahead": map[string]any{"method": "elicitation/create", "params": map[string]any{
			"mode": "form", "message": "Release " + t.release + " is built. Deploy it to production?", "requestedSchema": goAhead.raw}}})
		fmt.Fprintf(&b, `,"inputRequests":%s`, question)
	case "completed":
		fmt.Fprintf(&b, `,"result":{"content":[{"type":"text","text":%s}],"isError":false}`, strconv.Quote(result))
	}
	return b.String()
}
