package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/apiv1"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// apiApprovalAssign hands a call's approval on: POST
// /api/v1/calls/{id}/approval/assign with {"from": "ada", "to": "erin"},
// by an admin. It answers with the call as it is now; 403 with a sentence
// for someone not an admin, 409 once the approval ended or when from has
// decided, 422 when to cannot take it.
func (h *Handler) apiApprovalAssign(c echo.Context) error {
	var body apiv1.ApprovalAssignRequest
	if err := json.NewDecoder(c.Request().Body).Decode(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be a JSON object with "from" and "to".`)
	}
	call, err := h.handOnApproval(c, body)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, h.apiCallOf(call, nil))
}

// callApprovalAssign hands a call's approval on from its page (an admin's
// form beside "Still asked"); a refusal shows the page again saying why.
func (h *Handler) callApprovalAssign(c echo.Context) error {
	id := c.Param("id")
	values, err := formParams(c)
	if err != nil {
		return err
	}
	body := apiv1.ApprovalAssignRequest{From: strings.TrimSpace(values.Get("from")), To: strings.TrimSpace(values.Get("to"))}
	_, err = h.handOnApproval(c, body)
	var e *store.Error
	switch {
	case errors.As(err, &e):
		return h.renderNotice(c, errStatus(err), id, e.Message)
	case err != nil:
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/calls/"+id)
}

// handOnApproval hands the approval of the call in the path on, as the
// signed-in person, and reads the call as it is after it.
func (h *Handler) handOnApproval(c echo.Context, body apiv1.ApprovalAssignRequest) (*store.Call, error) {
	ctx := c.Request().Context()
	a, err := h.store.HandOnApproval(ctx, store.ApprovalHandOn{Call: c.Param("id"), From: body.From, To: body.To,
		By: h.person(c), Audit: h.auditEntry(c, "", "", "", nil)})
	if err != nil {
		return nil, err
	}
	return h.callWithApproval(ctx, c.Param("id"), a)
}

// approvalHistoryVM fills in vm what happened to approval a besides
// decisions: its escalation and its hand-ons, and, for an admin while it
// waits, where the form that hands it on posts.
func approvalHistoryVM(vm *views.ApprovalVM, a *store.Approval, callID string, admin bool) {
	if a.EscalatedAt != nil && a.EscalateTo != nil {
		vm.Escalated = &views.EscalatedVM{To: *a.EscalateTo, At: *a.EscalatedAt}
	}
	for _, ho := range a.HandedOn {
		vm.HandOns = append(vm.HandOns, views.ApprovalHandOnVM{From: ho.From, To: ho.To, By: ho.By, At: ho.At})
	}
	if admin && a.State == store.ApprovalWaiting {
		vm.HandOnAction = "/calls/" + callID + "/approval/assign"
	}
}
