package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
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
	if !vm.Form.Empty {
		content, ok := vm.Form.Decode(values)
		if !ok {
			vm.Errors = errorLinks([]question{{Form: vm.Form}})
			return render(c, http.StatusUnprocessableEntity, views.ToolPage(*vm))
		}
		if content != nil {
			args = content
		}
	}
	raw, err := marshalNoEscape(args)
	if err != nil {
		return err
	}
	call, err := h.store.CreateCall(ctx, store.NewCall{
		ServerID: srv.ID, Owner: h.person(c), Method: mcpclient.MethodCallTool, Target: vm.Name, Title: vm.Title, Arguments: raw,
		Audit: h.userAudit(c, "call.started", "", map[string]any{"server": srv.Name, "tool": vm.Name}),
	})
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/calls/"+call.ID)
}
