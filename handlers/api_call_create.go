package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/catalog"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

type apiCallRequest struct {
	Server string `json:"server"`
	// Method is tools/call (the default), prompts/get or resources/read.
	Method    string          `json:"method"`
	Tool      string          `json:"tool"`
	Prompt    string          `json:"prompt"`
	URI       string          `json:"uri"`
	Arguments json.RawMessage `json:"arguments"`
	// Assignee answers the rounds: a person's name or "team:NAME"; the
	// caller by default. WebhookURL receives the call's events.
	Assignee   string `json:"assignee"`
	WebhookURL string `json:"webhook_url"`
	// Protocol starts the call with this revision ("2025-11-25" for a tool
	// that asks over a session); "" or "auto" takes the server's setting.
	Protocol string `json:"protocol"`
	// EscalateAfter (a duration such as "2h"), EscalateTo and OnExpiry
	// override the server's deadlines for this call's rounds.
	EscalateAfter string `json:"escalate_after"`
	EscalateTo    string `json:"escalate_to"`
	OnExpiry      string `json:"on_expiry"`
}

// apiCallCreate starts a tool call, a prompt or a resource read:
// POST /api/v1/calls. What the request names is checked first, then who
// answers the call, its webhook and deadlines, then its arguments, and
// last what it calls, as round.NewCall decides.
func (h *Handler) apiCallCreate(c echo.Context) error {
	ctx := c.Request().Context()
	wait, err := waitParams(c)
	if err != nil {
		return err
	}
	var req apiCallRequest
	if err := json.NewDecoder(c.Request().Body).Decode(&req); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The body must be a JSON object.")
	}
	start := round.Start{Server: req.Server, Method: req.Method, Arguments: req.Arguments, Protocol: req.Protocol}
	switch req.Method {
	case "", mcpclient.MethodCallTool:
		start.Target = req.Tool
	case mcpclient.MethodGetPrompt:
		start.Target = req.Prompt
	case mcpclient.MethodReadResource:
		start.Target = req.URI
	}
	if err := start.Check(); err != nil {
		return refusedStart(c, err)
	}
	if req.Assignee != "" {
		if err := h.store.CheckAssignee(ctx, req.Assignee); err != nil {
			return err
		}
	}
	if req.WebhookURL != "" {
		if err := engine.CheckWebhookURL(req.WebhookURL, h.settings.WebhookAllowPrivate); err != nil {
			return err
		}
	}
	deadlines, err := h.apiDeadlines(ctx, req)
	if err != nil {
		return err
	}
	if err := start.CheckArguments(); err != nil {
		return refusedStart(c, err)
	}
	// With ?wait, the answer is held until the call's first round or its
	// end. The call's id is chosen here, so listening starts before the
	// call exists and no change slips by.
	id := store.NewCallID()
	w := h.watch(id, wait)
	if w != nil {
		defer w.stop()
	}
	srv, err := h.store.ServerToCall(ctx, req.Server)
	if err != nil {
		return err
	}
	found, err := h.lookUp(ctx, srv, start)
	if err != nil {
		return err
	}
	nc, err := round.NewCall(srv, start, found)
	if err != nil {
		return refusedStart(c, err)
	}
	nc.Owner, nc.Assignee, nc.WebhookURL, nc.ID, nc.Deadlines = h.person(c), req.Assignee, req.WebhookURL, id, deadlines
	nc.Audit = h.userAudit(c, "call.started", "", map[string]any{"server": srv.Name, "api": true, round.TargetField(nc.Method): nc.Target,
		"assignee": assigneeOr(req.Assignee, h.person(c)), "webhook": req.WebhookURL != ""})
	call, err := h.createCall(ctx, nc)
	if err != nil {
		return err
	}
	return h.writeCallWaited(c, http.StatusCreated, w, call, nil, firstRound)
}

// firstRound is the condition a call's start waits for: a round, an
// approval, or the end.
func firstRound(call *store.Call) bool {
	return call.Status == store.CallInputRequired && call.CurrentSeq > 0 || call.Status == store.CallApprovalRequired
}

// lookUp finds what start calls on srv, to check its arguments against: a
// tool, looked up in the server's catalog, or a prompt. A server that asks
// the caller to connect before it lists its tools gets the call unchecked:
// it waits for the caller to connect (authorization_required), and the
// server checks the arguments.
func (h *Handler) lookUp(ctx context.Context, srv *store.Server, start round.Start) (round.Found, error) {
	switch start.Method {
	case mcpclient.MethodGetPrompt:
		prompt, err := h.catalog.Prompt(ctx, signedIn(ctx), srv, start.Target)
		return round.Found{Prompt: prompt}, err
	case mcpclient.MethodCallTool:
		tool, err := h.toolToCall(ctx, srv, start.Target)
		switch {
		case errors.As(err, new(*mcpclient.AuthRequiredError)):
			return round.Found{}, nil
		case err != nil:
			return round.Found{}, err
		case tool == nil:
			return round.Found{}, &store.Error{Kind: store.ErrNotFound, Message: "tool " + start.Target + " not found"}
		}
		return round.Found{Tool: tool}, nil
	}
	return round.Found{}, nil
}

// refusedStart answers a start round refused: with the arguments that do
// not fit, as the API words them, or as an HTTP error (400 for arguments
// that are not JSON at all, else 422).
func refusedStart(c echo.Context, err error) error {
	var se *round.StartError
	switch {
	case !errors.As(err, &se):
		return err
	case len(se.Fields) > 0:
		return writeJSON(c, http.StatusUnprocessableEntity, apiError{Error: apiMessage{
			Message: se.Message,
			Fields:  map[string]map[string]string{"arguments": se.Fields},
		}})
	case se.Unreadable:
		return echo.NewHTTPError(http.StatusBadRequest, se.Message)
	}
	return echo.NewHTTPError(http.StatusUnprocessableEntity, se.Message)
}

// toolToCall looks up a server's tool in its cached catalog, else in its
// tools listed afresh. It returns nil when the server has no such tool.
func (h *Handler) toolToCall(ctx context.Context, srv *store.Server, name string) (*mcp.Tool, error) {
	if tool, fresh := h.catalog.CachedTool(srv, name); fresh {
		return tool, nil
	}
	tools, err := h.catalog.Tools(ctx, signedIn(ctx), srv)
	if err != nil {
		return nil, err
	}
	return catalog.FindTool(tools, name), nil
}
