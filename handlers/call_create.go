package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// callCreate starts a tool call from the tool form and sends the person to
// the call's page.
func (h *Handler) callCreate(c echo.Context) error {
	ctx := c.Request().Context()
	vm, srv, err := h.toolPage(ctx, c.Param("server"), c.Param("tool"))
	if err != nil {
		return err
	}
	values, err := c.FormParams()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	args := map[string]any{}
	vm.Assignee.Value = strings.TrimSpace(values.Get(assigneeField))
	assigneeErr := h.checkAssignee(ctx, vm.Assignee.Value)
	if assigneeErr != "" {
		vm.Assignee.Error = assigneeErr
	}
	if !vm.Form.Empty {
		content, ok := vm.Form.Decode(values)
		if !ok || assigneeErr != "" {
			vm.Errors = views.FormErrors(vm.Form)
			if assigneeErr != "" {
				vm.Errors = append(vm.Errors, views.ErrorLink{Href: "#call-assignee", Message: assigneeErr})
			}
			return h.renderToolPage(c, http.StatusUnprocessableEntity, vm)
		}
		if content != nil {
			args = content
		}
	}
	if assigneeErr != "" {
		vm.Errors = []views.ErrorLink{{Href: "#call-assignee", Message: assigneeErr}}
		return h.renderToolPage(c, http.StatusUnprocessableEntity, vm)
	}
	if vm.Destructive && values.Get("confirm_destructive") != "yes" {
		// What was typed is kept: the form is shown again, filled in.
		vm.ConfirmError = "Tick the box to confirm that you want to run this tool."
		vm.Errors = []views.ErrorLink{{Href: "#confirm-destructive", Message: vm.ConfirmError}}
		return h.renderToolPage(c, http.StatusUnprocessableEntity, vm)
	}
	raw, err := mcpclient.MarshalRaw(args)
	if err != nil {
		return err
	}
	// The form, built from the tool's input schema, checked the arguments.
	nc, err := round.NewCall(srv, round.Start{Method: mcpclient.MethodCallTool, Target: vm.Name, Title: vm.Title, Arguments: raw}, round.Found{})
	if err != nil {
		return refusedStart(c, err)
	}
	nc.Owner, nc.Assignee = h.person(c), vm.Assignee.Value
	nc.Audit = h.userAudit(c, "call.started", "", map[string]any{"server": srv.Name, "tool": vm.Name, "assignee": assigneeOr(vm.Assignee.Value, h.person(c))})
	return h.startCall(c, nc)
}

// startCall stores a call started from a page and sends the person to its
// page, once the server's first reply is in or settleWait has passed
// (see settle): the page then shows the first round or the result.
func (h *Handler) startCall(c echo.Context, nc store.NewCall) error {
	ctx := c.Request().Context()
	nc.ID = store.NewCallID()
	w := h.watch(nc.ID, settleWait)
	if w != nil {
		defer w.stop()
	}
	call, err := h.createCall(ctx, nc)
	if err != nil {
		return err
	}
	w.settle(ctx, call)
	return c.Redirect(http.StatusSeeOther, "/calls/"+call.ID)
}

// createCall stores a call and has this instance send its first request
// at once, its River job the safety net (engine.StartCall).
func (h *Handler) createCall(ctx context.Context, nc store.NewCall) (*store.Call, error) {
	return h.engine.StartCall(ctx, nc)
}

// assigneeOr is who a new call's rounds wait for: assignee, or the person
// starting it.
func assigneeOr(assignee, person string) string {
	if assignee == "" {
		return person
	}
	return assignee
}
