package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/catalog"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
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
// POST /api/v1/calls.
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
	if req.Method == "" {
		req.Method = mcpclient.MethodCallTool
	}
	var target, title string
	switch req.Method {
	case mcpclient.MethodCallTool:
		target = req.Tool
	case mcpclient.MethodGetPrompt:
		target = req.Prompt
	case mcpclient.MethodReadResource:
		target = req.URI
	default:
		return echo.NewHTTPError(http.StatusUnprocessableEntity, `"method" must be "tools/call", "prompts/get" or "resources/read".`)
	}
	if req.Server == "" || target == "" {
		what := map[string]string{mcpclient.MethodCallTool: "tool", mcpclient.MethodGetPrompt: "prompt", mcpclient.MethodReadResource: "uri"}[req.Method]
		return echo.NewHTTPError(http.StatusUnprocessableEntity, `"server" and "`+what+`" are required.`)
	}
	if !knownProtocol(req.Protocol) {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, `"protocol" must be `+protocolChoices()+".")
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
	if len(req.Arguments) == 0 || string(req.Arguments) == "null" {
		req.Arguments = json.RawMessage(`{}`)
	}
	var args any
	if err := json.Unmarshal(req.Arguments, &args); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `"arguments" must be a JSON object.`)
	}
	argsMap, ok := args.(map[string]any)
	if !ok {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, `"arguments" must be a JSON object.`)
	}
	// With ?wait, the answer is held until the call's first round or its
	// end. The call's id is chosen here, so listening starts before the
	// call exists and no change slips by.
	id := store.NewCallID()
	w := h.watch(id, wait)
	if w != nil {
		defer w.stop()
	}
	if req.Method == mcpclient.MethodCallTool {
		return h.apiToolCallCreate(c, req, args, id, w, deadlines)
	}
	srv, err := h.store.ServerToCall(ctx, req.Server)
	if err != nil {
		return err
	}
	var fieldErrs map[string]string
	switch req.Method {
	case mcpclient.MethodGetPrompt:
		prompt, err := h.catalog.Prompt(ctx, signedIn(ctx), srv, req.Prompt)
		if err != nil {
			return err
		}
		title = prompt.Title
		fieldErrs = checkPromptArguments(prompt.Arguments, argsMap)
	case mcpclient.MethodReadResource:
		if err := checkURI(req.URI); err != nil {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, err.Error())
		}
		if len(argsMap) > 0 {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, `A resource read takes no "arguments".`)
		}
	}
	if len(fieldErrs) > 0 {
		what := map[string]string{mcpclient.MethodCallTool: "the tool's input schema", mcpclient.MethodGetPrompt: "the prompt's arguments"}[req.Method]
		return writeJSON(c, http.StatusUnprocessableEntity, apiError{Error: apiMessage{
			Message: "The arguments do not fit " + what + ".",
			Fields:  map[string]map[string]string{"arguments": fieldErrs},
		}})
	}
	detail := map[string]any{"server": srv.Name, "api": true, "assignee": assigneeOr(req.Assignee, h.person(c)), "webhook": req.WebhookURL != ""}
	detail[map[string]string{mcpclient.MethodCallTool: "tool", mcpclient.MethodGetPrompt: "prompt", mcpclient.MethodReadResource: "uri"}[req.Method]] = target
	call, err := h.createCall(ctx, store.NewCall{
		ServerID: srv.ID, Owner: h.person(c), Method: req.Method, Target: target, Title: title, Arguments: req.Arguments,
		Assignee: req.Assignee, WebhookURL: req.WebhookURL,
		Audit:    h.userAudit(c, "call.started", "", detail),
		Protocol: strings.TrimPrefix(req.Protocol, mcpclient.ProtocolAuto), ID: id, Deadlines: deadlines,
	})
	if err != nil {
		return err
	}
	return h.writeCallWaited(c, http.StatusCreated, w, call, nil, firstRound)
}

// firstRound is the condition a call's start waits for: a round, or the end.
func firstRound(call *store.Call) bool {
	return call.Status == store.CallInputRequired && call.CurrentSeq > 0
}

// apiToolCallCreate starts a tool call: the tool is looked up, its input
// schema checks the arguments, and the call is stored. A server that asks
// the caller to connect before it lists its tools gets the call unchecked:
// it waits for the caller to connect (authorization_required), and the
// server checks the arguments.
func (h *Handler) apiToolCallCreate(c echo.Context, req apiCallRequest, args any, id string, w *watcher, deadlines *store.Deadlines) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerToCall(ctx, req.Server)
	if err != nil {
		return err
	}
	nc := store.NewCall{
		ServerID: srv.ID, Owner: h.person(c), Method: mcpclient.MethodCallTool, Target: req.Tool, Arguments: req.Arguments,
		Protocol: strings.TrimPrefix(req.Protocol, mcpclient.ProtocolAuto), Assignee: req.Assignee, WebhookURL: req.WebhookURL, ID: id,
		Deadlines: deadlines,
	}
	tool, err := h.toolToCall(ctx, srv, req.Tool)
	var authErr *mcpclient.AuthRequiredError
	switch {
	case errors.As(err, &authErr):
		// Started unchecked: the server checks the arguments once the
		// caller has connected.
	case err != nil:
		return err
	case tool == nil:
		return &store.Error{Kind: store.ErrNotFound, Message: "tool " + req.Tool + " not found"}
	default:
		// An optional argument given as null is taken as not given (SEP-2243):
		// the call goes without it, and without its Mcp-Param-* header.
		args, nc.Arguments = withoutNulls(tool, args, nc.Arguments)
		if fieldErrs := toolArgumentErrors(tool, args); len(fieldErrs) > 0 {
			return writeJSON(c, http.StatusUnprocessableEntity, apiError{Error: apiMessage{
				Message: "The arguments do not fit the tool's input schema.",
				Fields:  map[string]map[string]string{"arguments": fieldErrs},
			}})
		}
		nc.Target, nc.Title = tool.Name, toolTitle(tool)
	}
	nc.Audit = h.userAudit(c, "call.started", "", map[string]any{"server": srv.Name, "api": true, "tool": nc.Target,
		"assignee": assigneeOr(req.Assignee, h.person(c)), "webhook": req.WebhookURL != ""})
	call, err := h.createCall(ctx, nc)
	if err != nil {
		return err
	}
	return h.writeCallWaited(c, http.StatusCreated, w, call, nil, firstRound)
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

// toolArgumentErrors checks arguments against a tool's input schema and
// returns errors by argument; none when the schema cannot check them.
func toolArgumentErrors(tool *mcp.Tool, args any) map[string]string {
	schema, err := json.Marshal(tool.InputSchema)
	if err != nil || string(schema) == "null" {
		return nil
	}
	errs, err := forms.Validate(schema, args)
	if err != nil {
		return nil
	}
	return errs
}

// withoutNulls drops the arguments given as null that the tool's schema
// refuses as null and does not require, from both the decoded arguments
// and their raw JSON (the others keep their bytes and order).
func withoutNulls(tool *mcp.Tool, args any, raw json.RawMessage) (any, json.RawMessage) {
	m, ok := args.(map[string]any)
	if !ok {
		return args, raw
	}
	errs := toolArgumentErrors(tool, args)
	var schema struct {
		Required []string `json:"required"`
	}
	if b, err := json.Marshal(tool.InputSchema); err == nil {
		_ = json.Unmarshal(b, &schema)
	}
	drop := map[string]bool{}
	for k, v := range m {
		if _, refused := errs[k]; v == nil && refused && !slices.Contains(schema.Required, k) {
			drop[k] = true
		}
	}
	if len(drop) == 0 {
		return args, raw
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return args, raw
	}
	kept := map[string]any{}
	var out bytes.Buffer
	out.WriteByte('{')
	for _, k := range mcpclient.ObjectKeys(raw) {
		if drop[k] {
			continue
		}
		kept[k] = m[k]
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		key, _ := mcpclient.MarshalRaw(k)
		out.Write(key)
		out.WriteByte(':')
		out.Write(fields[k])
	}
	out.WriteByte('}')
	return kept, out.Bytes()
}
