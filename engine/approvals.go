package engine

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/catalog"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// approvalFor says whether a new call must wait for people's go-ahead: a
// tool call some rule of its server's policy applies to, as the rule sees
// the call (the tool's annotations as the server last listed them, the
// arguments, the caller's name and teams, the agent's name). It returns
// the approval to ask, or nil.
func (e *Engine) approvalFor(ctx context.Context, nc store.NewCall) (*store.NewApproval, error) {
	if nc.Method != mcpclient.MethodCallTool {
		return nil, nil
	}
	facts, err := e.store.ServerApprovalFacts(ctx, nc.ServerID)
	if err != nil {
		return nil, err
	}
	policy, err := approvals.Parse(facts.Rules)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrInvalid, Message: "The server's approval rules cannot be read: " + err.Error()}
	}
	if policy.Empty() {
		return nil, nil
	}
	teams, err := e.store.TeamsOf(ctx, nc.Owner)
	if err != nil {
		return nil, err
	}
	c := approvals.Call{Tool: nc.Target, Caller: approvals.Caller{Name: nc.Owner, Teams: teams}}
	if c.Caller.Teams == nil {
		c.Caller.Teams = []string{}
	}
	if nc.Agent != nil {
		c.Caller.Agent = nc.Agent.Name
	}
	if tool := storedTool(facts.Tools, nc.Target); tool != nil && tool.Annotations != nil {
		c.Annotations = &approvals.Annotations{ReadOnlyHint: &tool.Annotations.ReadOnlyHint, DestructiveHint: tool.Annotations.DestructiveHint}
	}
	dec := json.NewDecoder(strings.NewReader(string(nc.Arguments)))
	dec.UseNumber()
	if err := dec.Decode(&c.Args); err != nil || c.Args == nil {
		c.Args = map[string]any{}
	}
	rule, i, err := policy.Match(c)
	if rule == nil {
		return nil, nil
	}
	if err != nil {
		// The rule applies: asking is the safe side.
		e.log.WarnContext(ctx, "an approval rule's condition could not be evaluated; the rule applies",
			"server_id", nc.ServerID, "tool", nc.Target, "rule", i+1, "err", err)
	}
	raw, err := json.Marshal(rule)
	if err != nil {
		return nil, err
	}
	return &store.NewApproval{Rule: raw, Ask: rule.Ask, Needs: rule.Needs, All: rule.All,
		Expires: e.cfg.Now().Add(e.roundTTL(ctx, nc.ServerID))}, nil
}

// storedTool is the tool named name among a server's tools as last
// listed, or nil.
func storedTool(tools json.RawMessage, name string) *mcp.Tool {
	var list []*mcp.Tool
	if json.Unmarshal(tools, &list) != nil {
		return nil
	}
	return catalog.FindTool(list, name)
}

// Decide records a person's decision on a call's approval (see
// store.Decide): approved arguments that differ from those asked are
// checked against the tool's input schema first. When it approves the
// call, its first request is sent at once from this instance, as
// StartCall sends it. The API, the call's page and the mail's links
// decide through it.
func (e *Engine) Decide(ctx context.Context, d store.ApprovalDecision) (*store.Decided, error) {
	switch d.Decision {
	case store.DecisionApprove, store.DecisionDecline:
	default:
		return nil, &store.Error{Kind: store.ErrInvalid, Message: `"decision" must be "approve" or "decline".`}
	}
	if d.Decision == store.DecisionDecline {
		d.Arguments = nil
	}
	if len(d.Arguments) > 0 {
		args, err := e.checkApproved(ctx, d.Call, d.Arguments)
		if err != nil {
			return nil, err
		}
		d.Arguments = args
	}
	d.SendAfter = e.cfg.RequestTimeout + directMargin
	d.Audit.Instance = e.cfg.InstanceID
	out, err := e.store.Decide(ctx, d)
	if err != nil {
		return nil, err
	}
	e.sendNow(out.Direct)
	return out, nil
}

// checkApproved checks arguments an approver gives against the call's
// tool's input schema, as the server last listed it; a *round.StartError
// says which do not fit.
func (e *Engine) checkApproved(ctx context.Context, callID string, args json.RawMessage) (json.RawMessage, error) {
	call, err := e.store.Call(ctx, callID)
	if err != nil {
		return nil, err
	}
	facts, err := e.store.ServerApprovalFacts(ctx, call.ServerID)
	if err != nil {
		return nil, err
	}
	found := round.Found{Tool: storedTool(facts.Tools, call.Target)}
	nc, err := round.NewCall(call.Server(), round.Start{Method: call.Method, Target: call.Target, Arguments: args}, found)
	if err != nil {
		return nil, err
	}
	return nc.Arguments, nil
}
