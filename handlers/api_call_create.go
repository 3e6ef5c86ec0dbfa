package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

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
	// Protocol starts the call with this revision ("2025-11-25" for a tool
	// that asks over a session); "" or "auto" takes the server's setting.
	Protocol string `json:"protocol"`
}

// apiCallCreate starts a tool call, a prompt or a resource read:
// POST /api/v1/calls.
func (h *Handler) apiCallCreate(c echo.Context) error {
	ctx := c.Request().Context()
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
		return echo.NewHTTPError(http.StatusUnprocessableEntity, `"protocol" must be "auto" or a revision: "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26" or "2024-11-05".`)
	}
	srv, err := h.store.ServerByName(ctx, req.Server)
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
	var fieldErrs map[string]string
	switch req.Method {
	case mcpclient.MethodCallTool:
		tool, err := h.engine.Tool(ctx, srv, req.Tool)
		var authErr *mcpclient.AuthRequiredError
		if errors.As(err, &authErr) {
			// The caller is not connected yet: the call waits for them
			// (authorization_required), and the server checks the arguments.
			break
		}
		if err != nil {
			return err
		}
		target, title = tool.Name, toolTitle(tool)
		if schema, err := json.Marshal(tool.InputSchema); err == nil && string(schema) != "null" {
			if errs, err := forms.Validate(schema, args); err == nil && len(errs) > 0 {
				fieldErrs = errs
			}
		}
	case mcpclient.MethodGetPrompt:
		prompt, err := h.engine.Prompt(ctx, srv, req.Prompt)
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
	call, err := h.store.CreateCall(ctx, store.NewCall{
		ServerID: srv.ID, Owner: h.person(c), Method: req.Method, Target: target, Title: title, Arguments: req.Arguments,
		Protocol: strings.TrimPrefix(req.Protocol, "auto"),
	})
	if err != nil {
		return err
	}
	detail := map[string]any{"server": srv.Name, "api": true}
	detail[map[string]string{mcpclient.MethodCallTool: "tool", mcpclient.MethodGetPrompt: "prompt", mcpclient.MethodReadResource: "uri"}[req.Method]] = target
	h.audit(c, "call.started", call.ID, detail)
	return writeJSON(c, http.StatusCreated, h.apiCallOf(call, nil))
}
