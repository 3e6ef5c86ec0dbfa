package agents

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// An agent's request is held while its call runs or a person in Rounds
// answers, up to AGENT_WAIT. Changes are heard from any instance through
// the Notifier; a periodic read covers notifications lost meanwhile.
// Something goes out at least every Keepalive, so proxies keep the stream:
// notifications/progress when the request asked for it, else an SSE
// comment.

// lookEvery is how often a held request reads its call anyway.
const lookEvery = 5 * time.Second

// maxHeld caps the requests an instance holds for AGENT_WAIT; past it, a
// request waits briefWait at most, then hears that its call goes on.
const (
	maxHeld   = 1000
	briefWait = 3 * time.Second
)

// watcher listens for one call's changes.
type watcher struct {
	notes  <-chan struct{}
	latest func() *store.CallNote
	stop   func()
}

// watch starts listening for call id's changes.
func (d *Door) watch(id string) *watcher {
	if d.o.Notifier == nil {
		return &watcher{stop: func() {}}
	}
	notes, latest, stop := d.o.Notifier.Watch(id)
	return &watcher{notes: notes, latest: latest, stop: stop}
}

// noted is call as the latest change notification says it is now, read
// from the note itself (a held request then costs Postgres no read per
// change), or nil when the note does not carry it all; stale is true of a
// note older than call, which is not news (announced after its commit, a
// note can come after a later one from another instance).
func (w *watcher) noted(call *store.Call) (next *store.Call, stale bool) {
	if w.latest == nil {
		return nil, false
	}
	note := w.latest()
	if note == nil || note.Partial || note.ID != call.ID {
		return nil, false
	}
	if note.UpdatedAt.Before(call.UpdatedAt) {
		return nil, true
	}
	c := *call
	c.Status, c.CurrentSeq, c.Error = note.Status, note.Seq, note.Error
	if note.Status == store.CallQueued && call.Status == store.CallRunning && note.Seq == call.CurrentSeq {
		c.Status = store.CallRunning // a note (progress) of the request out: still running
	}
	c.Retryable, c.UpdatedAt, c.Result, c.Progress = note.Retryable, note.UpdatedAt, note.Result, note.Progress
	return &c, false
}

// await holds the request until the call ends, or asks the agent a round
// newer than after, and answers it; or until AGENT_WAIT, when the answer
// says the call goes on in Rounds. The agent closing the request cancels
// the call; Rounds shutting down does not.
func (d *Door) await(q *Request, w *watcher, call *store.Call, after int) error {
	wait := d.o.Wait
	select {
	case d.slots <- struct{}{}:
		defer func() { <-d.slots }()
	default:
		wait = min(wait, briefWait)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	keep := time.NewTicker(d.o.Keepalive)
	defer keep.Stop()
	look := time.NewTicker(lookEvery)
	defer look.Stop()
	p := &progress{q: q}
	var r *store.Round
	var err error
	for {
		if call.Finished() {
			return d.answerEnd(q, call)
		}
		if call.Status == store.CallInputRequired && call.CurrentSeq > after {
			// Read at every change: whom the round asks may change too.
			if r, err = d.o.Store.Round(context.WithoutCancel(q.Ctx), call.ID, call.CurrentSeq); err != nil {
				return err
			}
			if r.Status == store.RoundPending && r.Asks != nil && *r.Asks == store.AsksAgent {
				if q.session == nil {
					return d.askAgent(q, call, r)
				}
				if err := d.askOnStream(q, call, r); err != nil {
					return err
				}
				after = r.Seq
			}
		}
		if call.Status == store.CallApprovalRequired && call.Approval == nil {
			if err := d.o.Store.WithApproval(context.WithoutCancel(q.Ctx), call); err != nil {
				return err
			}
		}
		p.say(waitingFor(call, r))
		select {
		case <-q.Ctx.Done():
			if d.shuttingDown() || q.session != nil {
				// A 2025-11-25 agent cancels with notifications/cancelled.
				return nil
			}
			return d.agentStopped(q, call.ID)
		case <-d.closing:
			return d.goesOn(q, call, "Rounds is restarting")
		case <-deadline.C:
			return d.goesOn(q, call, "No answer came within "+wait.String())
		case <-keep.C:
			p.keepalive()
			continue
		case <-look.C:
		case <-w.notes:
			next, stale := w.noted(call)
			if stale {
				continue
			}
			if next != nil {
				call = next
				continue
			}
		}
		if call, err = d.o.Store.CallShown(context.WithoutCancel(q.Ctx), call.ID); err != nil {
			return err
		}
	}
}

// waitingFor says what the call waits for, for the agent's progress.
func waitingFor(call *store.Call, r *store.Round) string {
	switch call.Status {
	case store.CallInputRequired:
		if r != nil && r.Seq == call.CurrentSeq && r.Asks != nil && *r.Asks == store.AsksAgent {
			// A session's agent, asked on this very stream.
			return "Waiting for your answers to " + call.ServerName + "'s questions"
		}
		if r != nil && r.Seq == call.CurrentSeq && r.Asks != nil && *r.Asks == store.AsksOwner {
			return "Waiting for " + call.Owner + " to answer in Rounds"
		}
		return "Waiting for " + assigneeWords(call) + " to answer in Rounds"
	case store.CallAuthorizationRequired:
		return "Waiting for " + call.Owner + " to connect to " + call.ServerName + " in Rounds"
	case store.CallApprovalRequired:
		return approvalWords(call)
	}
	if p := call.RunningProgress(); p != nil && p.Message != "" {
		// What the server itself last said of its work.
		return "Waiting for " + call.ServerName + ": " + p.Message
	}
	return "Waiting for " + call.ServerName
}

// approvalWords says whose approval a call waits for: "Waiting for
// approval from team:finance in Rounds". The server has not seen it.
func approvalWords(call *store.Call) string {
	a := call.Approval
	if a == nil {
		return "Waiting for approval in Rounds"
	}
	who := strings.Join(a.Ask, ", ")
	if a.Needs > 1 {
		return fmt.Sprintf("Waiting for %d approvals from %s in Rounds", a.Needs, who)
	}
	return "Waiting for approval from " + who + " in Rounds"
}

// assigneeWords names who answers a call's rounds.
func assigneeWords(call *store.Call) string {
	if call.Assignee == nil || *call.Assignee == "" {
		return call.Owner
	}
	if team, ok := strings.CutPrefix(*call.Assignee, store.TeamPrefix); ok {
		return "team " + team
	}
	return *call.Assignee
}

// progress is what a held request has told its agent.
type progress struct {
	q    *Request
	n    int
	said string
}

// say sends msg as progress when the request asked for progress and msg
// is news.
func (p *progress) say(msg string) {
	if msg == p.said || len(p.q.Meta.ProgressToken) == 0 {
		return
	}
	p.said = msg
	p.send()
}

// keepalive sends progress again, or a comment.
func (p *progress) keepalive() {
	if len(p.q.Meta.ProgressToken) > 0 && p.said != "" {
		p.send()
		return
	}
	_ = p.q.startStream().comment()
}

func (p *progress) send() {
	p.n++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
		"params": map[string]any{"progressToken": p.q.Meta.ProgressToken, "progress": p.n, "message": p.said}})
	_ = p.q.startStream().event(b)
}

// answerEnd answers with how the call ended: the server's result as it
// sent it, its JSON-RPC error as it gave it, or Rounds' words (a tool's
// isError result, else an error).
func (d *Door) answerEnd(q *Request, call *store.Call) error {
	if call.Status == store.CallComplete && len(call.Result) > 0 {
		return q.Result(q.completed(call.Result))
	}
	if call.Status == store.CallFailed {
		raw, err := d.o.Store.CallServerError(context.WithoutCancel(q.Ctx), call.ID)
		if err != nil {
			return err
		}
		var se struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Status  int             `json:"status"`
			Data    json.RawMessage `json:"data"`
		}
		if len(raw) > 0 && json.Unmarshal(raw, &se) == nil {
			re := &RPCError{Status: cmp.Or(se.Status, protocolStatus(se.Code)), Code: se.Code, Message: se.Message}
			if len(se.Data) > 0 {
				re.Data = se.Data
			}
			return re
		}
	}
	msg := "The call ended: " + call.Status + "."
	if call.Error != nil {
		msg, _, _ = strings.Cut(*call.Error, mcpclient.DetailSeparator)
	}
	if call.Status == store.CallFailed && q.Method == mcpclient.MethodCallTool {
		return q.ResultOf(toolError(msg))
	}
	return &RPCError{Status: 200, Code: -32603, Message: msg}
}

// toolError is a CallToolResult marked isError, saying msg.
func toolError(msg string) map[string]any {
	return map[string]any{"resultType": "complete", "isError": true,
		"content": []map[string]string{{"type": "text", "text": msg}}}
}

// goesOn answers a request whose call is still open in Rounds: the wait
// ran out, or Rounds is stopping (why says which). The answer names the call and how to
// fetch its outcome later, and is marked isError so no agent takes it for
// the tool's output.
func (d *Door) goesOn(q *Request, call *store.Call, why string) error {
	msg := fmt.Sprintf("%s. The call goes on in Rounds: call %s, %s. Read the resource %s%s on this server for its outcome later, "+
		"or open %s/calls/%s.", why, call.ID, strings.ToLower(waitingFor(call, nil)), OutcomeURIPrefix, call.ID, d.o.PublicURL, call.ID)
	if q.Method == mcpclient.MethodCallTool {
		return q.ResultOf(toolError(msg))
	}
	return &RPCError{Status: 200, Code: -32603, Message: msg, Data: map[string]string{"call": call.ID}}
}

// agentStopped cancels a call whose agent closed its request.
func (d *Door) agentStopped(q *Request, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q.Ctx), 10*time.Second)
	defer cancel()
	return d.cancelCall(ctx, q, id)
}

// cancelCall cancels call id for its agent, as the API's cancel does, with
// the call saying the agent stopped it.
func (d *Door) cancelCall(ctx context.Context, q *Request, id string) error {
	label := q.agent().Label()
	if call, err := d.o.Store.Call(ctx, id); err == nil && call.Agent != nil {
		label = call.Agent.Label() // as it said when it started the call
	}
	entry := q.audit("call.cancelled", id, map[string]any{"by_agent": true})
	err := d.o.Store.CancelCallSaying(ctx, id, "The agent ("+label+") stopped this call.", *entry)
	if err != nil && !isConflict(err) {
		d.o.Log.WarnContext(ctx, "cancelling an agent's call", "call", id, "err", err)
	}
	return nil
}

// protocolStatus is the HTTP status MCP gives a JSON-RPC error code: 400
// for the protocol's own errors (header mismatch, missing client
// capability, unsupported version), 200 for the rest.
func protocolStatus(code int64) int {
	switch code {
	case CodeHeaderMismatch, CodeMissingClientCapability, CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}
