package agents

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// The tasks extension (io.modelcontextprotocol/tasks) as Rounds serves it
// to agents: a tools/call from an agent that declared the extension gets a
// task at once, and the task is the call (its id is the call's, a random
// UUID). This file says what a call looks like as a task; task_methods.go
// answers tasks/get, tasks/update and tasks/cancel.

// ExtensionTasks names the tasks extension in capabilities.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// A task's statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// How often an agent is asked to poll: while the server works, and while
// a person in Rounds is asked (people take minutes, not seconds).
const (
	taskPollWorking = 2 * time.Second
	taskPollPerson  = 10 * time.Second
)

// Task is a call as the tasks extension shows it: a CreateTaskResult
// (ResultType "task") or a tasks/get result (ResultType "complete").
type Task struct {
	ResultType    string `json:"resultType"`
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is never null: finished calls are deleted after RETENTION.
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	InputRequests  json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
}

// TaskFacts is what a task is made of: the call as read now, its current
// round when it waits on one, the keys of that round the agent answered
// already (store.AgentAnswerPart), and how long finished calls are kept.
type TaskFacts struct {
	Call     *store.Call
	Round    *store.Round
	Answered []string
	// ServerError is the JSON-RPC error the server failed the call with.
	ServerError json.RawMessage
	Retention   time.Duration
	Now         time.Time
}

// TaskOf is the call as a task, for tasks/get.
func TaskOf(f TaskFacts) Task {
	c := f.Call
	t := Task{ResultType: "complete", TaskID: c.ID, CreatedAt: stamp(c.CreatedAt), LastUpdatedAt: stamp(c.UpdatedAt)}
	t.TTLMs = taskTTL(c, f.Retention, f.Now).Milliseconds()
	switch c.Status {
	case store.CallComplete:
		t.Status, t.Result = taskCompleted, fillResult(c.Result, false)
	case store.CallFailed:
		t = failure(t, c, f.ServerError)
	case store.CallCancelled, store.CallExpired:
		t.Status, t.StatusMessage = taskCancelled, stopped(c)
	case store.CallAuthorizationRequired:
		t.Status, t.PollIntervalMs = taskWorking, taskPollPerson.Milliseconds()
		t.StatusMessage = "Waiting for " + c.Owner + " to sign in to " + c.ServerName + " in Rounds"
	case store.CallApprovalRequired:
		t.Status, t.PollIntervalMs = taskWorking, taskPollPerson.Milliseconds()
		t.StatusMessage = approvalWords(c)
	case store.CallInputRequired:
		t = waiting(t, f)
	default:
		t.Status, t.PollIntervalMs = taskWorking, taskPollWorking.Milliseconds()
		if p := c.RunningProgress(); p != nil {
			t.StatusMessage = p.Message
		}
	}
	return t
}

// Created is the task as tools/call answers it (a CreateTaskResult).
func Created(f TaskFacts) Task {
	t := TaskOf(f)
	t.ResultType = "task"
	return t
}

// waiting is a call waiting on a round: the agent's questions, or the
// person in Rounds who is asked.
func waiting(t Task, f TaskFacts) Task {
	r := f.Round
	t.Status, t.PollIntervalMs = taskWorking, taskPollPerson.Milliseconds()
	if r == nil || r.Status != store.RoundPending {
		// Answered a moment ago: the server is being asked again.
		t.PollIntervalMs = taskPollWorking.Milliseconds()
		return t
	}
	if r.Asks != nil && *r.Asks == store.AsksAgent {
		t.PollIntervalMs = taskPollWorking.Milliseconds()
		if asked := inputRequests(r, f.Answered); asked != nil {
			t.Status, t.InputRequests = taskInputRequired, asked
		}
		return t
	}
	who := f.Call.Owner
	if (r.Asks == nil || *r.Asks != store.AsksOwner) && f.Call.Assignee != nil {
		who = *f.Call.Assignee
	}
	if team, ok := strings.CutPrefix(who, "team:"); ok {
		who = "someone in " + team
	}
	t.StatusMessage = "Waiting for " + who + " to answer in Rounds"
	return t
}

// inputRequests are the round's questions the agent has yet to answer,
// in the server's order and as the server sent them, each under a key
// unique over the task's life: "<seq>.<key>" (a server's own keys may
// come back in its next round). Nil when none is left.
func inputRequests(r *store.Round, answered []string) json.RawMessage {
	done := map[string]bool{}
	for _, k := range answered {
		done[k] = true
	}
	dec := json.NewDecoder(bytes.NewReader(r.InputRequests))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out bytes.Buffer
	out.WriteByte('{')
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if done[key] {
			continue
		}
		if n > 0 {
			out.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(TaskKey(r.Seq, key))
		out.Write(k)
		out.WriteByte(':')
		out.Write(v)
	}
	if n == 0 {
		return nil
	}
	out.WriteByte('}')
	return out.Bytes()
}

// TaskKey is the key a question of round seq goes under in a task's
// inputRequests.
func TaskKey(seq int, key string) string { return strconv.Itoa(seq) + "." + key }

// SplitTaskKey reads a task's key back into the round and the server's key.
func SplitTaskKey(k string) (seq int, key string, ok bool) {
	s, key, found := strings.Cut(k, ".")
	n, err := strconv.Atoi(s)
	if !found || err != nil || n < 1 || key == "" || strconv.Itoa(n) != s {
		return 0, "", false
	}
	return n, key, true
}

// failure is a failed call as a task. The tasks extension keeps "failed"
// for JSON-RPC errors: the server's, which the task carries as it was
// answered. A call that failed in Rounds (the server out of reach, a round's
// state refused, too many rounds) had no such error; it is "completed" with
// a tool result marked isError that says why, since tasks/get returns what
// the request would have returned, and the door answers a tools/call held
// open whose call failed in Rounds with that very result (answerEnd).
func failure(t Task, c *store.Call, serverError json.RawMessage) Task {
	msg := message(c)
	var se struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	if len(serverError) > 0 && json.Unmarshal(serverError, &se) == nil {
		// As a JSON-RPC error object: without the HTTP status it came with.
		t.Error, _ = json.Marshal(se)
		t.Status, t.StatusMessage = taskFailed, msg
		return t
	}
	b, _ := json.Marshal(toolError(msg))
	t.Status, t.StatusMessage, t.Result = taskCompleted, msg, b
	return t
}

// message is the sentence a call ended with, without the technical
// detail a person may unfold on its page.
func message(c *store.Call) string {
	if c.Error == nil || *c.Error == "" {
		return "The call failed."
	}
	msg, _, _ := strings.Cut(*c.Error, mcpclient.DetailSeparator)
	return msg
}

// ownCancel is what the store says of a call its owner stopped, to them.
const ownCancel = "You cancelled this call."

// stopped says who stopped the call, or that its deadline passed.
func stopped(c *store.Call) string {
	switch {
	case c.Error == nil || *c.Error == "":
		return "The call was stopped."
	case *c.Error == ownCancel:
		return c.Owner + " stopped the call in Rounds."
	case *c.Error == store.RoundExpiredMessage:
		return "The round's deadline passed before it was answered."
	}
	return *c.Error
}

// taskTTL is how long after its creation the call is kept: until
// RETENTION after it finishes, so at least that long from now while it
// goes on.
func taskTTL(c *store.Call, retention time.Duration, now time.Time) time.Duration {
	end := now
	if c.FinishedAt != nil {
		end = *c.FinishedAt
	}
	return max(end.Sub(c.CreatedAt), 0) + retention
}

// stamp writes a time as the extension's ISO 8601.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// declaresTasks reports whether per-request client capabilities (the
// _meta's clientCapabilities, as sent) declare the tasks extension.
func declaresTasks(caps json.RawMessage) bool {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if len(caps) == 0 || json.Unmarshal(caps, &c) != nil {
		return false
	}
	v, ok := c.Extensions[ExtensionTasks]
	return ok && len(v) > 0 && v[0] == '{'
}
