package agents

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// callParams are the params of tools/call, prompts/get and resources/read,
// with the answers of a retry (multi round-trip requests).
type callParams struct {
	Name           string          `json:"name"`
	URI            string          `json:"uri"`
	Arguments      json.RawMessage `json:"arguments"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   *string         `json:"requestState"`
}

// call starts a call (tools/call, prompts/get, resources/read) in Rounds
// for the agent, or takes the agent's answers to a round it was asked,
// then waits for what follows.
func (d *Door) call(q *Request) error {
	var p callParams
	if err := json.Unmarshal(q.Params, &p); err != nil {
		return invalidParams("The params must be a JSON object.")
	}
	target := p.Name
	if q.Method == mcpclient.MethodReadResource {
		target = p.URI
		if id, ok := strings.CutPrefix(p.URI, OutcomeURIPrefix); ok {
			return d.outcome(q, id)
		}
	}
	if p.RequestState != nil {
		return d.resume(q, *p.RequestState, p.InputResponses)
	}
	if len(p.InputResponses) > 0 && string(p.InputResponses) != "null" {
		return invalidParams("inputResponses come with the requestState they answer.")
	}
	start := round.Start{Server: q.Server.Name, Method: q.Method, Target: target, Arguments: p.Arguments}
	if err := start.Check(); err != nil {
		return invalidParams(err.Error())
	}
	nc, err := round.NewCall(q.Server, start, round.Found{})
	if err != nil {
		return invalidParams(err.Error())
	}
	if q.Method == mcpclient.MethodCallTool {
		if tool, fresh := d.o.Catalog.CachedTool(q.Server, target); fresh && tool != nil {
			nc.Title = round.ToolTitle(tool)
		}
	}
	agent := q.agent()
	nc.ID, nc.Owner, nc.Agent = store.NewCallID(), q.Who.User.Name, agent
	nc.Audit = q.audit("call.started", "", map[string]any{"server": q.Server.Name, round.TargetField(nc.Method): nc.Target})
	if q.Method == mcpclient.MethodCallTool && declaresTasks(q.Meta.ClientCapabilities) {
		return d.startTask(q, nc)
	}
	// Listening starts before the call exists, so no change slips by.
	w := d.watch(nc.ID)
	defer w.stop()
	call, err := d.o.Engine.StartCall(q.Ctx, nc)
	if err != nil {
		return err
	}
	return d.await(q, w, call, 0)
}

// agent is the store's record of the agent asking, from the request's
// _meta and its token.
func (q *Request) agent() *store.Agent {
	if q.session != nil {
		a := q.session.Agent
		a.RequestID = string(q.ID)
		return &a
	}
	a := &store.Agent{Protocol: q.Meta.ProtocolVersion, RequestID: string(q.ID),
		OAuthClient: q.Who.OAuthClient, OAuthClientName: q.Who.OAuthClientName, LogLevel: q.Meta.LogLevel}
	if ci := q.Meta.ClientInfo; ci != nil {
		a.Name, a.Version = ci.Name, ci.Version
	}
	if q.Who.TokenID != 0 {
		id := q.Who.TokenID
		a.TokenID = &id
	}
	var caps struct {
		Elicitation *struct {
			Form json.RawMessage `json:"form"`
			URL  json.RawMessage `json:"url"`
		} `json:"elicitation"`
		Sampling json.RawMessage `json:"sampling"`
		Roots    json.RawMessage `json:"roots"`
	}
	_ = json.Unmarshal(q.Meta.ClientCapabilities, &caps)
	if e := caps.Elicitation; e != nil {
		// An elicitation capability naming no mode is form mode.
		a.Can.Form = e.Form != nil || e.URL == nil
		a.Can.URL = e.URL != nil
	}
	a.Can.Sampling, a.Can.Roots = caps.Sampling != nil, caps.Roots != nil
	return a
}

// audit is an audit entry of the owner's, naming the agent that acted.
func (q *Request) audit(action, target string, detail map[string]any) *store.AuditEntry {
	if detail == nil {
		detail = map[string]any{}
	}
	a := q.agent()
	detail["agent"] = a.Label()
	if a.TokenID != nil {
		detail["token_id"] = *a.TokenID
	}
	if a.OAuthClient != "" {
		detail["oauth_client"] = a.OAuthClient
	}
	addr, _ := q.Ctx.Value(clientIPKey{}).(string)
	return &store.AuditEntry{Instance: q.d.o.InstanceID, Actor: q.Who.User.Name, Action: action, Target: target,
		Addr: addr, Detail: detail}
}

// resume takes an agent's answers to the round its state names, then waits
// for what follows. A state not given to this caller, malformed, or whose
// round is no longer waiting is refused (-32602).
func (d *Door) resume(q *Request, state string, responses json.RawMessage) error {
	s, err := d.unseal(q, state)
	if errors.Is(err, errBadState) {
		return &RPCError{Status: http.StatusOK, Code: -32602, Message: "The requestState is not valid here: " + errBadState.Error() + "."}
	}
	if err != nil {
		return err
	}
	w := d.watch(s.Call)
	defer w.stop()
	call, a, err := d.answerRound(q.Ctx, q, s.Call, s.Seq, responses, func(c *store.Call) bool { return c.Owner == s.Owner }, nil)
	switch {
	case errors.Is(err, errUsedState), errors.Is(err, round.ErrNotWaiting), isNotFound(err):
		return &RPCError{Status: http.StatusOK, Code: -32602, Message: "The requestState is not valid here: its question was already answered, or ended."}
	case errors.Is(err, errUnfit):
		return &RPCError{Status: http.StatusOK, Code: -32602, Message: "Some answers do not fit: " + a.Misfit.String(),
			Data: map[string]any{"fields": a.Misfit}}
	case err != nil:
		return err
	}
	return d.await(q, w, call, s.Seq)
}

// Errors that roll an agent's answer back.
var (
	errUsedState = errors.New("the state's round is not waiting for the agent")
	errUnfit     = errors.New("the answers do not fit")
)
