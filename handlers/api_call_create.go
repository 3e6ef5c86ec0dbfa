package handlers

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

type apiCallRequest struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// apiCallCreate starts a tool call: POST /api/v1/calls.
func (h *Handler) apiCallCreate(c echo.Context) error {
	ctx := c.Request().Context()
	var req apiCallRequest
	if err := json.NewDecoder(c.Request().Body).Decode(&req); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The body must be a JSON object.")
	}
	if req.Server == "" || req.Tool == "" {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, `"server" and "tool" are required.`)
	}
	srv, err := h.store.ServerByName(ctx, req.Server)
	if err != nil {
		return err
	}
	tool, err := h.engine.Tool(ctx, srv, req.Tool)
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
	if _, ok := args.(map[string]any); !ok {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, `"arguments" must be a JSON object.`)
	}
	if schema, err := json.Marshal(tool.InputSchema); err == nil && string(schema) != "null" {
		if fieldErrs, err := forms.Validate(schema, args); err == nil && len(fieldErrs) > 0 {
			return writeJSON(c, http.StatusUnprocessableEntity, apiError{Error: apiMessage{
				Message: "The arguments do not fit the tool's input schema.",
				Fields:  map[string]map[string]string{"arguments": fieldErrs},
			}})
		}
	}
	call, err := h.store.CreateCall(ctx, store.NewCall{
		ServerID: srv.ID, Owner: h.person(c), Method: mcpclient.MethodCallTool, Target: tool.Name, Arguments: req.Arguments,
	})
	if err != nil {
		return err
	}
	h.audit(c, "call.started", call.ID, map[string]any{"server": srv.Name, "tool": tool.Name, "api": true})
	return writeJSON(c, http.StatusCreated, newAPICall(call, nil))
}
