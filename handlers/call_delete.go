package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Deleting calls, for privacy requests: a person deletes a call of their
// own or all of them, an administrator a person's. Each is audited in the
// deletion's own transaction; the audit entry names the call or the
// person, never what the calls held.

// callDelete deletes one call: POST /calls/{id}/delete.
func (h *Handler) callDelete(c echo.Context) error {
	if err := h.deleteCall(c, false); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/")
}

// apiCallDelete deletes one call: DELETE /api/v1/calls/{id}, 204.
func (h *Handler) apiCallDelete(c echo.Context) error {
	if err := h.deleteCall(c, true); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *Handler) deleteCall(c echo.Context, api bool) error {
	ctx := c.Request().Context()
	call, err := h.ownedCall(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	detail := map[string]any{"owner": call.Owner}
	if api {
		detail["api"] = true
	}
	return h.store.DeleteCall(ctx, call.ID, *h.userAudit(c, "call.deleted", call.ID, detail))
}

// accountCallsDelete deletes every call the signed-in person started:
// POST /account/calls/delete, with confirm=yes.
func (h *Handler) accountCallsDelete(c echo.Context) error {
	if c.FormValue("confirm") != "yes" {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "Tick the box to say you understand, then delete your calls.")
	}
	if _, err := h.store.DeleteCallsOf(c.Request().Context(), h.person(c), *h.userAudit(c, "calls.deleted", "", nil)); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/account?done=calls_deleted")
}

// adminUserCallsDelete deletes every call a person started, as an
// administrator: POST /admin/users/{name}/calls/delete, with confirm=yes.
func (h *Handler) adminUserCallsDelete(c echo.Context) error {
	if c.FormValue("confirm") != "yes" {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "Confirm that the person's calls are to be deleted.")
	}
	name := c.Param("name")
	if _, err := h.store.UserByName(c.Request().Context(), name); err != nil {
		return err
	}
	entry := h.userAudit(c, "calls.deleted", "", map[string]any{"by_admin": true})
	if _, err := h.store.DeleteCallsOf(c.Request().Context(), name, *entry); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/admin/users?done=calls_deleted")
}
