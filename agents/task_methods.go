package agents

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// Rounds creates and answers the tasks of the tasks extension itself: a
// tools/call whose request declares the extension is answered at once with
// a task (the call, once committed), and the agent polls tasks/get on any
// instance, answers the questions put to it with tasks/update, and may stop
// the call with tasks/cancel. notifications/cancelled does not stop a task
// (the extension forbids it; see store.AgentCall).

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// taskAck is the empty acknowledgement of tasks/update and tasks/cancel.
var taskAck = json.RawMessage(`{"resultType":"complete"}`)

// noTask answers a task that is unknown, or not the caller's: the same
// error for both, so a task id tells a stranger nothing.
func noTask() *RPCError {
	return &RPCError{Status: http.StatusOK, Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
}

// startTask starts the call with the agent given a task, and answers with
// the task once the call is committed, so that tasks/get finds it on any
// instance at once.
func (d *Door) startTask(q *Request, nc store.NewCall) error {
	nc.Agent.Task = true
	call, err := d.o.Engine.StartCall(q.Ctx, nc)
	if err != nil {
		return err
	}
	if err := d.o.Store.WithApproval(q.Ctx, call); err != nil {
		return err
	}
	return q.ResultOf(Created(TaskFacts{Call: call, Retention: d.o.Engine.Config().Retention, Now: time.Now()}))
}

// task reads the task a tasks/* request names, if the caller may see it:
// an agent's task call of the same person, on this server (for an OAuth
// token, one its grant names). A request that did not declare the
// extension is refused as the extension says (-32021).
func (d *Door) task(q *Request) (*store.AgentTask, taskParams, error) {
	var p taskParams
	if !declaresTasks(q.Meta.ClientCapabilities) {
		return nil, p, &RPCError{Status: http.StatusOK, Code: CodeMissingClientCapability, Message: "Missing required client capability",
			Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}}}}
	}
	if err := json.Unmarshal(q.Params, &p); err != nil || p.TaskID == "" {
		return nil, p, invalidParams("The params must name a taskId.")
	}
	t, err := d.o.Store.AgentTask(q.Ctx, p.TaskID)
	if isNotFound(err) || errors.Is(err, store.ErrInvalid) {
		return nil, p, noTask()
	}
	if err != nil {
		return nil, p, err
	}
	c := t.Call
	if c.Agent == nil || !c.Agent.Task || c.Owner != q.Who.User.Name || c.ServerName != q.Server.Name {
		return nil, p, noTask()
	}
	return t, p, nil
}

// facts is what TaskOf needs of a task read now.
func (d *Door) facts(ctx context.Context, t *store.AgentTask) TaskFacts {
	if t.Call.Status == store.CallApprovalRequired {
		// Read for its words; a failed read leaves them plainer.
		_ = d.o.Store.WithApproval(ctx, t.Call)
	}
	return TaskFacts{Call: t.Call, Round: t.Round, Answered: t.Answered, ServerError: t.ServerError,
		Retention: d.o.Engine.Config().Retention, Now: time.Now()}
}

// tasksGet answers tasks/get: where the call stands, as a task.
func (d *Door) tasksGet(q *Request) error {
	t, _, err := d.task(q)
	if err != nil {
		return err
	}
	return q.ResultOf(TaskOf(d.facts(q.Ctx, t)))
}

// tasksCancel answers tasks/cancel: the call is cancelled as the API's
// cancel does, its page saying the agent stopped it. A call that already
// ended is left as it is; the acknowledgement is the same.
func (d *Door) tasksCancel(q *Request) error {
	t, _, err := d.task(q)
	if err != nil {
		return err
	}
	if !t.Call.Finished() {
		if err := d.cancelCall(q.Ctx, q, t.Call.ID); err != nil {
			return err
		}
	}
	return q.Result(taskAck)
}

// tasksUpdate answers tasks/update: each response to a question the round
// asking the agent still has outstanding is kept (store.AgentAnswerPart);
// the others (keys never issued, answered already, or of a round gone by)
// are ignored, as the extension says. Once every question of the round has
// its answer, the round is answered as a retry with Rounds' state answers
// it (answerRound), and the call goes on.
func (d *Door) tasksUpdate(q *Request) error {
	t, p, err := d.task(q)
	if err != nil {
		return err
	}
	r := t.Round
	if r == nil || r.Status != store.RoundPending || r.Asks == nil || *r.Asks != store.AsksAgent || t.Call.Status != store.CallInputRequired {
		return q.Result(taskAck)
	}
	keys := roundKeys(r.InputRequests)
	var all map[string]json.RawMessage
	for _, k := range slices.Sorted(maps.Keys(p.InputResponses)) {
		seq, key, ok := SplitTaskKey(k)
		if !ok || seq != r.Seq || slices.Contains(t.Answered, key) || !slices.Contains(keys, key) {
			continue
		}
		got, err := d.o.Store.AgentAnswerPart(q.Ctx, t.Call.ID, seq, keys, key, p.InputResponses[k])
		if errors.Is(err, store.ErrConflict) {
			// The round ended meanwhile (answered in Rounds, stopped).
			return q.Result(taskAck)
		}
		if err != nil {
			return err
		}
		if got != nil {
			all = got
		}
	}
	if all == nil {
		return q.Result(taskAck)
	}
	responses, err := json.Marshal(all)
	if err != nil {
		return err
	}
	_, a, err := d.answerRound(q.Ctx, q, t.Call.ID, r.Seq, responses, func(c *store.Call) bool { return c.Owner == t.Call.Owner }, nil)
	switch {
	case errors.Is(err, errUnfit):
		// Asked again, all of them: they must fit together.
		if ferr := d.o.Store.ForgetAgentAnswers(q.Ctx, t.Call.ID, r.Seq); ferr != nil {
			return ferr
		}
		return &RPCError{Status: http.StatusOK, Code: jsonrpc.CodeInvalidParams, Message: "Some answers do not fit: " + a.Misfit.String(),
			Data: map[string]any{"fields": a.Misfit}}
	case errors.Is(err, errUsedState), errors.Is(err, round.ErrNotWaiting), isNotFound(err), isConflict(err):
		// Answered first elsewhere: by another instance with the same
		// answers, or by the owner on the call's page.
	case err != nil:
		return err
	}
	return q.Result(taskAck)
}

// roundKeys are the keys of a round's questions.
func roundKeys(inputRequests json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(inputRequests, &m) != nil {
		return nil
	}
	return slices.Collect(maps.Keys(m))
}
