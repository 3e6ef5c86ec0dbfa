package handlers

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/apiv1"
	"github.com/mcp-rounds/rounds/store"
)

// apiCallApproval decides on a call's approval: POST
// /api/v1/calls/{id}/approval with {"decision": "approve", "arguments":
// {…}} or {"decision": "decline", "reason": "…"}. It answers with the call
// as it is now; 403 with a sentence for the caller or someone not asked,
// 409 once the approval has ended.
func (h *Handler) apiCallApproval(c echo.Context) error {
	var body apiv1.ApprovalRequest
	if err := json.NewDecoder(c.Request().Body).Decode(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be a JSON object with "decision".`)
	}
	if string(body.Arguments) == "null" {
		body.Arguments = nil
	}
	call, err := h.decide(c, body)
	if err != nil {
		return refusedStart(c, err)
	}
	return writeJSON(c, http.StatusOK, h.apiCallOf(call, nil))
}

// decide records the signed-in person's decision on the approval of the
// call in the path, and reads the call as it is after it.
func (h *Handler) decide(c echo.Context, body apiv1.ApprovalRequest) (*store.Call, error) {
	ctx := c.Request().Context()
	out, err := h.engine.Decide(ctx, store.ApprovalDecision{Call: c.Param("id"), By: h.person(c), Decision: body.Decision,
		Arguments: body.Arguments, Reason: body.Reason, Audit: h.auditEntry(c, "", "", "", nil)})
	if err != nil {
		return nil, err
	}
	return h.callWithApproval(ctx, c.Param("id"), out.Approval)
}

// callWithApproval reads a call with its approval a, just read.
func (h *Handler) callWithApproval(ctx context.Context, id string, a *store.Approval) (*store.Call, error) {
	call, err := h.store.Call(ctx, id)
	if err != nil {
		return nil, err
	}
	call.Approval = a
	return call, nil
}
