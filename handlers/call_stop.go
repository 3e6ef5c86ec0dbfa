package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// callStop stops a call that has not ended: its request's stream is closed
// on whichever instance sends it, which tells the server to stop, and a
// waiting round is cancelled. The audit log says who.
func (h *Handler) callStop(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.startedCall(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	entry := h.auditEntry(c, h.person(c), "call.cancelled", call.ID, map[string]any{"seq": call.CurrentSeq, "status": call.Status})
	err = h.store.CancelCall(ctx, call.ID, entry)
	if errors.Is(err, store.ErrConflict) {
		return h.renderNotice(c, http.StatusConflict, call.ID, err.Error())
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/calls/"+call.ID)
}
