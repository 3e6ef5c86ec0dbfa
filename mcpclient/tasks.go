package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tasks extension (io.modelcontextprotocol/tasks, 2026-07-28): a server
// may answer a tool call with a task handle instead of its result; the
// client polls tasks/get, answers the task's questions with tasks/update,
// and may ask it to stop with tasks/cancel. Every tools/call declares the
// extension (see params); the go-sdk knows nothing of tasks, so they are
// read here from the raw result, as rounds are.

// ExtensionTasks names the tasks extension in capabilities.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// resultTask is the resultType of a task handle.
const resultTask = "task"

// A task's statuses.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// CodeMissingCapability is the JSON-RPC error a server answers a request it
// cannot serve without a capability (an extension) the client did not
// declare.
const CodeMissingCapability = -32021

// maxTaskID bounds a task id: it goes back in the Mcp-Name header.
const maxTaskID = 512

// Task is what a server said of a task: its handle, or a tasks/get answer.
type Task struct {
	// ID is the server's task id. Like a requestState it may be the
	// server's bearer token for the task: it never leaves Rounds.
	ID     string
	Status string
	// Message is the task's statusMessage, as bounded text.
	Message   string
	CreatedAt time.Time
	// TTL is how long after CreatedAt the server keeps the task; nil for
	// unlimited.
	TTL *time.Duration
	// PollInterval is how often the server asks to be polled; zero when
	// it did not say.
	PollInterval time.Duration
	// InputRequests are the questions of an input_required task, byte for
	// byte, and Questions their summary in the server's order.
	InputRequests json.RawMessage
	Questions     []Question
	// Result is a completed task's result, as sent.
	Result json.RawMessage
	// Error is a failed task's JSON-RPC error.
	Error *ServerError
}

// Deadline is when the server may forget the task: CreatedAt + TTL.
func (t *Task) Deadline() (time.Time, bool) {
	if t.TTL == nil || t.CreatedAt.IsZero() {
		return time.Time{}, false
	}
	return t.CreatedAt.Add(*t.TTL), true
}

// Ended reports whether the task reached a terminal status.
func (t *Task) Ended() bool {
	switch t.Status {
	case TaskCompleted, TaskFailed, TaskCancelled:
		return true
	}
	return false
}

// task reads a task from a result: a tool call's handle or a tasks/get
// answer. What the server sends is checked as a round's would be.
func (c *Client) task(result json.RawMessage, caps Capabilities) (*Task, error) {
	var w struct {
		TaskID         *string         `json:"taskId"`
		Status         string          `json:"status"`
		StatusMessage  string          `json:"statusMessage"`
		CreatedAt      string          `json:"createdAt"`
		TTLMs          *float64        `json:"ttlMs"`
		PollIntervalMs *float64        `json:"pollIntervalMs"`
		InputRequests  json.RawMessage `json:"inputRequests"`
		Result         json.RawMessage `json:"result"`
		Error          *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(result, &w); err != nil {
		return nil, fmt.Errorf("the server sent a task that is not one: %w", err)
	}
	if w.TaskID == nil || *w.TaskID == "" {
		return nil, errors.New("the server sent a task without a taskId")
	}
	if !headerSafe(*w.TaskID) {
		return nil, errors.New("the server sent a taskId that cannot go back in a header (it must be visible ASCII, at most 512 characters)")
	}
	t := &Task{ID: *w.TaskID, Status: w.Status, Message: boundedText(w.StatusMessage)}
	switch w.Status {
	case TaskWorking, TaskInputRequired, TaskCompleted, TaskFailed, TaskCancelled:
	default:
		return nil, fmt.Errorf("the server sent a task with an unknown status %q", w.Status)
	}
	if at, err := time.Parse(time.RFC3339Nano, w.CreatedAt); err == nil {
		t.CreatedAt = at
	}
	if w.TTLMs != nil && *w.TTLMs >= 0 {
		ttl := time.Duration(*w.TTLMs) * time.Millisecond
		t.TTL = &ttl
	}
	if w.PollIntervalMs != nil && *w.PollIntervalMs > 0 {
		t.PollInterval = time.Duration(*w.PollIntervalMs) * time.Millisecond
	}
	switch w.Status {
	case TaskInputRequired:
		if len(w.InputRequests) == 0 || bytes.Equal(w.InputRequests, []byte("null")) {
			// Nothing outstanding yet: the next poll will say.
			t.InputRequests = json.RawMessage(`{}`)
			break
		}
		if err := checkStorable(w.InputRequests, "its questions", true); err != nil {
			return nil, err
		}
		qs, err := ParseQuestions(w.InputRequests)
		if err != nil {
			return nil, err
		}
		if err := checkRound(w.InputRequests, qs); err != nil {
			return nil, err
		}
		if err := caps.check(qs); err != nil {
			return nil, err
		}
		t.InputRequests, t.Questions = bytes.Clone(w.InputRequests), qs
	case TaskCompleted:
		if len(w.Result) == 0 || w.Result[0] != '{' {
			return nil, errors.New("the server said the task completed, without its result")
		}
		if err := checkStorable(w.Result, "its result", false); err != nil {
			return nil, err
		}
		t.Result = bytes.Clone(w.Result)
	case TaskFailed:
		t.Error = &ServerError{Code: CodeInternalError, Message: "the server gave no error"}
		if w.Error != nil {
			t.Error = &ServerError{Code: w.Error.Code, Message: boundedText(w.Error.Message)}
		}
	}
	return t, nil
}

// CodeInternalError is JSON-RPC's internal error.
const CodeInternalError = -32603

// GetTask asks the server where the task stands (tasks/get).
func (c *Client) GetTask(ctx context.Context, srv Server, taskID string) (*Task, error) {
	result, err := c.taskRequest(ctx, srv, "tasks/get", taskID, nil)
	if err != nil {
		return nil, err
	}
	t, err := c.task(result, srv.Capabilities)
	if err != nil {
		return nil, err
	}
	if t.ID != taskID {
		return nil, fmt.Errorf("the server answered tasks/get with another task")
	}
	return t, nil
}

// UpdateTask gives the task the answers to its questions (tasks/update):
// responses is the inputResponses object, by the questions' keys.
func (c *Client) UpdateTask(ctx context.Context, srv Server, taskID string, responses json.RawMessage) error {
	_, err := c.taskRequest(ctx, srv, "tasks/update", taskID, responses)
	return err
}

// CancelTask asks the server to stop the task (tasks/cancel). It is
// cooperative: the task may still complete.
func (c *Client) CancelTask(ctx context.Context, srv Server, taskID string) error {
	_, err := c.taskRequest(ctx, srv, "tasks/cancel", taskID, nil)
	return err
}

// taskRequest sends one of the task methods, with the Mcp-Name header the
// transport asks for, so that a load balancer can route it to the server
// instance holding the task.
func (c *Client) taskRequest(ctx context.Context, srv Server, method, taskID string, responses json.RawMessage) (json.RawMessage, error) {
	if !headerSafe(taskID) {
		return nil, errors.New("the task id cannot go in a header")
	}
	version, err := c.protocol(ctx, srv)
	if err != nil {
		return nil, err
	}
	if version < ProtocolStateless {
		return nil, fmt.Errorf("the server speaks %s, which has no tasks", version)
	}
	declared := srv.Capabilities.json()
	declared["extensions"] = map[string]any{ExtensionTasks: map[string]any{}}
	params, err := MarshalRaw(struct {
		Meta           map[string]any  `json:"_meta"`
		TaskID         string          `json:"taskId"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	}{
		Meta: map[string]any{
			mcp.MetaKeyProtocolVersion:    version,
			mcp.MetaKeyClientInfo:         c.impl,
			mcp.MetaKeyClientCapabilities: declared,
		},
		TaskID:         taskID,
		InputResponses: responses,
	})
	if err != nil {
		return nil, err
	}
	header := srv.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	header.Set("Mcp-Name", taskID)
	srv.Header = header
	srv.Progress, srv.Log = nil, nil
	return c.exchange(ctx, srv, newRequestID(), method, params, "")
}

// TaskGone reports whether the server no longer knows the task: -32602,
// which it answers for a task that expired, was purged or never was.
func TaskGone(err error) bool {
	var refused *HTTPError
	if errors.As(err, &refused) {
		return refused.Code == CodeInvalidParams
	}
	var server *ServerError
	return errors.As(err, &server) && server.Code == CodeInvalidParams
}

// headerSafe reports whether s can be sent as a header value as it is.
func headerSafe(s string) bool {
	if s == "" || len(s) > maxTaskID {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// boundedText keeps a server's words as text: valid UTF-8, no NULs, at
// most 500 characters.
func boundedText(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	return s
}
