package journeys

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"
)

// Task agents: an agent that declares the tasks extension
// (io.modelcontextprotocol/tasks) gets a task at once for its tools/call,
// and Rounds answers tasks/get, tasks/update and tasks/cancel itself, on
// any instance. The go-sdk client (v1.8.0) sees the extension in
// server/discover, but has no tasks support: it cannot read a
// CreateTaskResult's taskId nor send tasks/*. So the task agent here is a
// small raw JSON-RPC client over HTTP (taskAgent), sending the requests as
// the extension writes them (per-request _meta, Mcp-Name).

// taskAgent is an agent speaking the tasks extension to Rounds.
type taskAgent struct {
	t     *testing.T
	token string
	// caps are its per-request clientCapabilities besides the extension.
	caps string
}

// rpcReply is a JSON-RPC response.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// agentTask is a task as Rounds writes it.
type agentTask struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	CreatedAt      time.Time                  `json:"createdAt"`
	LastUpdatedAt  time.Time                  `json:"lastUpdatedAt"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Result         json.RawMessage            `json:"result"`
	Error          json.RawMessage            `json:"error"`
}

// send posts one request; withTasks says whether _meta declares the
// extension.
func (a *taskAgent) send(url, method, params string, withTasks bool) rpcReply {
	a.t.Helper()
	caps := a.caps
	if withTasks {
		caps = strings.TrimSuffix(caps, "}")
		if caps != "{" {
			caps += ","
		}
		caps += `"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"task-agent","version":"1.0"}}`
	named := params
	params = strings.TrimSuffix(params, "}")
	if params != "{" {
		params += ","
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + meta + `}}`
	req, err := http.NewRequestWithContext(a.t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Authorization", "Bearer "+a.token)
	var p struct {
		TaskID string `json:"taskId"`
		Name   string `json:"name"` // a tool's, which 2026-07-28 puts in Mcp-Name too
	}
	if json.Unmarshal([]byte(named), &p) == nil && p.TaskID+p.Name != "" {
		req.Header.Set("Mcp-Name", p.TaskID+p.Name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r rpcReply
	if err := json.Unmarshal(sseData(b), &r); err != nil {
		a.t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	}
	return r
}

// start calls a tool, declaring the extension, and returns its task.
func (a *taskAgent) start(url, tool, args string) agentTask {
	a.t.Helper()
	began := time.Now().Add(-time.Second)
	r := a.send(url, "tools/call", `{"name":"`+tool+`","arguments":`+args+`}`, true)
	task := a.task(r, "tools/call "+tool)
	if task.ResultType != "task" || task.TaskID == "" || task.Status != "working" || task.CreatedAt.Before(began) ||
		task.TTLMs == nil || *task.TTLMs <= 0 || task.PollIntervalMs <= 0 {
		a.t.Fatalf("tools/call %s answered %s, want a working task", tool, r.Result)
	}
	return task
}

// get asks where the task stands.
func (a *taskAgent) get(url, id string) agentTask {
	a.t.Helper()
	task := a.task(a.send(url, "tasks/get", `{"taskId":"`+id+`"}`, true), "tasks/get")
	if task.ResultType != "complete" || task.TaskID != id {
		a.t.Fatalf("tasks/get answered %+v", task)
	}
	return task
}

// until polls tasks/get until ok says so.
func (a *taskAgent) until(url, id string, limit time.Duration, ok func(agentTask) bool) agentTask {
	a.t.Helper()
	var task agentTask
	eventually(a.t, limit, func() error {
		if task = a.get(url, id); !ok(task) {
			return fmt.Errorf("the task stands at %+v", task)
		}
		return nil
	})
	return task
}

// ack sends tasks/update or tasks/cancel and checks the empty result.
func (a *taskAgent) ack(url, method, params string) {
	a.t.Helper()
	r := a.send(url, method, params, true)
	if r.Error != nil || string(r.Result) != `{"resultType":"complete"}` {
		a.t.Fatalf("%s %s: %s %+v", method, params, r.Result, r.Error)
	}
}

func (a *taskAgent) task(r rpcReply, what string) agentTask {
	a.t.Helper()
	if r.Error != nil {
		a.t.Fatalf("%s: error %d %s", what, r.Error.Code, r.Error.Message)
	}
	var task agentTask
	if err := json.Unmarshal(r.Result, &task); err != nil {
		a.t.Fatalf("%s: %v %s", what, err, r.Result)
	}
	return task
}

func hasStatus(s string) func(agentTask) bool { return func(t agentTask) bool { return t.Status == s } }

// TestAgentTasks: task agents on two instances. A person in Rounds answers
// one task's questions on the other instance, long after the request that
// started it; another task's questions are the agent's own, answered with
// tasks/update from either instance; a third is stopped with tasks/cancel.
// Nobody else may see a task.
func TestAgentTasks(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	logs := &logSink{}
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "MCP_REQUEST_TIMEOUT": "2s"}
	a, b := startInstance(t, db, env, logs), startInstance(t, db, env, logs)
	cli(t, db, "a long password\n", "user", "add", "ada")
	jar, _ := cookiejar.New(nil)
	ada := &client{t: t, token: newToken(t, db, "ada"), jar: jar}
	adaAgent := &taskAgent{t: t, token: ada.token, caps: `{}`}
	admin := newClient(t, db)
	formAgent := &taskAgent{t: t, token: admin.token, caps: `{"elicitation":{"form":{}}}`}
	atA, atB := a.URL+"/mcp/demo", b.URL+"/mcp/demo"

	// The go-sdk client reads in server/discover that Rounds does tasks.
	cs := agentSession(t, atA, admin.token, nil)
	if caps := cs.InitializeResult().Capabilities; caps == nil || caps.Extensions["io.modelcontextprotocol/tasks"] == nil {
		t.Errorf("server/discover declares %+v, want the tasks extension", caps)
	}

	t.Run("PersonAnswers", func(t *testing.T) {
		adaAgent.t, ada.t = t, t
		task := adaAgent.start(atA, "book_flight", `{}`)
		waiting := func(tk agentTask) bool {
			return tk.Status == "working" && tk.StatusMessage == "Waiting for ada to answer in Rounds"
		}
		task = adaAgent.until(atB, task.TaskID, 20*time.Second, waiting)
		if task.PollIntervalMs < 5000 {
			t.Errorf("pollIntervalMs %d while a person is asked, want a longer wait", task.PollIntervalMs)
		}
		// It stays so past the request timeout (MCP_REQUEST_TIMEOUT) and
		// the poll interval asked for, on either instance.
		since, tick := time.Now(), time.NewTicker(500*time.Millisecond)
		defer tick.Stop()
		for time.Since(since) < max(2*time.Second, time.Duration(task.PollIntervalMs)*time.Millisecond)+time.Second {
			<-tick.C
			if tk := adaAgent.get(atA, task.TaskID); !waiting(tk) {
				t.Fatalf("while ada has not answered: %+v", tk)
			}
		}
		ada.waitFor(b.URL, task.TaskID, 10*time.Second, roundIs(1))
		if status, body := ada.answer(b.URL, task.TaskID, 1, tripAnswers); status != http.StatusAccepted {
			t.Fatalf("ada's answer: %d %s", status, body)
		}
		ada.waitFor(b.URL, task.TaskID, 20*time.Second, roundIs(2))
		if status, body := ada.answer(b.URL, task.TaskID, 2, seatAnswers); status != http.StatusAccepted {
			t.Fatalf("ada's answer: %d %s", status, body)
		}
		done := adaAgent.until(atA, task.TaskID, 20*time.Second, hasStatus("completed"))
		if got := resultText(t, done.Result); got != booked {
			t.Errorf("the completed task's result says %q, want %q", got, booked)
		}
		call := ada.waitFor(b.URL, task.TaskID, 5*time.Second, isDone)
		if string(compact(t, call.Result)) != string(compact(t, done.Result)) {
			t.Errorf("the task's result %s is not the call's %s", done.Result, call.Result)
		}
	})

	t.Run("AgentAnswers", func(t *testing.T) {
		formAgent.t = t
		task := formAgent.start(atB, "book_flight", `{}`)
		asked := formAgent.until(atA, task.TaskID, 20*time.Second, hasStatus("input_required"))
		if len(asked.InputRequests) != 2 || asked.InputRequests["1.trip"] == nil || asked.InputRequests["1.party"] == nil {
			t.Fatalf("inputRequests %v, want 1.trip and 1.party", keysOf(asked.InputRequests))
		}
		var trip struct {
			Method string `json:"method"`
			Params struct {
				RequestedSchema json.RawMessage `json:"requestedSchema"`
			} `json:"params"`
		}
		if err := json.Unmarshal(asked.InputRequests["1.trip"], &trip); err != nil || trip.Method != "elicitation/create" || len(trip.Params.RequestedSchema) == 0 {
			t.Errorf("1.trip is %s, want the server's elicitation", asked.InputRequests["1.trip"])
		}
		// One answer at a time, from either instance; an unknown key is ignored.
		formAgent.ack(atB, "tasks/update", `{"taskId":"`+task.TaskID+`","inputResponses":{"1.trip":{"action":"accept","content":{"destination":"Lisbon","date":"2031-05-04"}},"9.nope":{"action":"accept"}}}`)
		part := formAgent.get(atA, task.TaskID)
		if part.Status != "input_required" || len(part.InputRequests) != 1 || part.InputRequests["1.party"] == nil {
			t.Fatalf("after one answer: %s %v, want 1.party alone", part.Status, keysOf(part.InputRequests))
		}
		// Answers that do not fit are refused, and every question asked again.
		r := formAgent.send(atA, "tasks/update", `{"taskId":"`+task.TaskID+`","inputResponses":{"1.party":{"action":"accept","content":{"passengers":"lots"}}}}`, true)
		if r.Error == nil || r.Error.Code != -32602 || !strings.HasPrefix(r.Error.Message, "Some answers do not fit") {
			t.Fatalf("answers that do not fit: %s %+v, want -32602", r.Result, r.Error)
		}
		if again := formAgent.get(atB, task.TaskID); again.Status != "input_required" || len(again.InputRequests) != 2 {
			t.Fatalf("after answers that did not fit: %s %v, want 1.trip and 1.party again", again.Status, keysOf(again.InputRequests))
		}
		formAgent.ack(atA, "tasks/update", `{"taskId":"`+task.TaskID+`","inputResponses":{"1.trip":{"action":"accept","content":{"destination":"Lisbon","date":"2031-05-04"}},"1.party":{"action":"accept","content":{"passengers":2}}}}`)
		second := formAgent.until(atB, task.TaskID, 20*time.Second, func(tk agentTask) bool {
			return tk.Status == "input_required" && tk.InputRequests["2.seat"] != nil
		})
		if len(second.InputRequests) != 1 {
			t.Errorf("the second round asks %v, want 2.seat", keysOf(second.InputRequests))
		}
		// The first round's keys are done with: answering them again does nothing.
		formAgent.ack(atB, "tasks/update", `{"taskId":"`+task.TaskID+`","inputResponses":{"1.party":{"action":"decline"},"2.seat":{"action":"accept","content":{"class":"business"}}}}`)
		done := formAgent.until(atA, task.TaskID, 20*time.Second, hasStatus("completed"))
		if got := resultText(t, done.Result); got != booked {
			t.Errorf("the completed task's result says %q, want %q", got, booked)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		formAgent.t, admin.t = t, t
		task := formAgent.start(atA, "deploy_release", `{"seconds":60}`)
		formAgent.until(atB, task.TaskID, 20*time.Second, func(tk agentTask) bool {
			return tk.Status == "working" && strings.HasPrefix(tk.StatusMessage, "Building release")
		})
		formAgent.ack(atB, "tasks/cancel", `{"taskId":"`+task.TaskID+`"}`)
		stopped := formAgent.until(atA, task.TaskID, 20*time.Second, hasStatus("cancelled"))
		if !strings.Contains(stopped.StatusMessage, "task-agent 1.0") || !strings.Contains(stopped.StatusMessage, "stopped") {
			t.Errorf("cancelled with %q, want the agent named as who stopped it", stopped.StatusMessage)
		}
		if call := admin.waitFor(b.URL, task.TaskID, 5*time.Second, isDone); call.Status != "cancelled" {
			t.Errorf("the call is %s, want cancelled", call.Status)
		}
	})

	t.Run("NotYours", func(t *testing.T) {
		formAgent.t, adaAgent.t = t, t
		task := formAgent.start(atA, "current_time", `{}`)
		formAgent.until(atB, task.TaskID, 20*time.Second, hasStatus("completed"))
		for _, id := range []string{task.TaskID, "00000000-0000-4000-8000-000000000000", "not-a-task"} {
			r := adaAgent.send(atB, "tasks/get", `{"taskId":"`+id+`"}`, true)
			if r.Error == nil || r.Error.Code != -32602 || r.Error.Message != "Failed to retrieve task: Task not found" {
				t.Errorf("ada's tasks/get of %s: %s %+v, want -32602 task not found", id, r.Result, r.Error)
			}
			if r := adaAgent.send(atB, "tasks/cancel", `{"taskId":"`+id+`"}`, true); r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("ada's tasks/cancel of %s: %s %+v, want -32602", id, r.Result, r.Error)
			}
		}
		if r := formAgent.send(atA, "tasks/get", `{"taskId":"`+task.TaskID+`"}`, false); r.Error == nil || r.Error.Code != -32021 {
			t.Errorf("tasks/get without the extension: %s %+v, want -32021", r.Result, r.Error)
		}
		// A JSON-RPC error from the server fails the task with that error.
		bad := formAgent.start(atA, "no_such_tool", `{}`)
		failed := formAgent.until(atB, bad.TaskID, 20*time.Second, hasStatus("failed"))
		var rpcErr struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(failed.Error, &rpcErr); err != nil || rpcErr.Code != -32602 || !strings.Contains(rpcErr.Message, "no_such_tool") ||
			failed.StatusMessage == "" || failed.Result != nil {
			t.Errorf("the failed task: %+v, want the server's -32602 error", failed)
		}
		// Without the extension, the same tool's answer is its result.
		r := formAgent.send(atA, "tools/call", `{"name":"current_time","arguments":{}}`, false)
		if r.Error != nil || !strings.Contains(string(r.Result), "The time is ") || strings.Contains(string(r.Result), `"task"`) {
			t.Errorf("tools/call without the extension: %s %+v", r.Result, r.Error)
		}
	})
}

// TestAgentTaskAcrossRestarts: a task agent polls its task, and answers
// it, after both instances stopped and two new ones started on the same
// database.
func TestAgentTaskAcrossRestarts(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	logs := &logSink{}
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a, b := startInstance(t, db, env, logs), startInstance(t, db, env, logs)
	agent := &taskAgent{t: t, token: newToken(t, db, "admin"), caps: `{"elicitation":{"form":{}}}`}
	task := agent.start(a.URL+"/mcp/demo", "deploy_release", `{"seconds":2}`)
	agent.get(b.URL+"/mcp/demo", task.TaskID)
	for _, in := range []*instance{a, b} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if err := in.Shutdown(ctx); err != nil {
			t.Logf("stopping an instance: %v", err)
		}
		cancel()
	}
	c, d := startInstance(t, db, env, logs), startInstance(t, db, env, logs)
	asked := agent.until(c.URL+"/mcp/demo", task.TaskID, 30*time.Second, hasStatus("input_required"))
	var key string
	for k := range asked.InputRequests {
		key = k
	}
	if len(asked.InputRequests) != 1 || !strings.HasSuffix(key, ".go_ahead") {
		t.Fatalf("the deploy asks %v, want its go_ahead", keysOf(asked.InputRequests))
	}
	agent.ack(d.URL+"/mcp/demo", "tasks/update", `{"taskId":"`+task.TaskID+`","inputResponses":{"`+key+`":{"action":"accept","content":{"confirm":true}}}}`)
	done := agent.until(c.URL+"/mcp/demo", task.TaskID, 30*time.Second, hasStatus("completed"))
	if got := resultText(t, done.Result); got != "Deployed release 1.4 to production." {
		t.Errorf("the task completed with %q", got)
	}
}

// booked is what book_flight says once answered as tripAnswers and
// seatAnswers say.
const booked = "Booked 2 passengers to Lisbon on 2031-05-04, Business class."

func keysOf(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// compact is JSON without insignificant spaces, for comparing.
func compact(t *testing.T, b json.RawMessage) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	out, _ := json.Marshal(v)
	return out
}
