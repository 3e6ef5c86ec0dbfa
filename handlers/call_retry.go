package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// callRetry queues a failed call's last request again with its stored
// answers, so nobody types them twice.
func (h *Handler) callRetry(c echo.Context) error {
	call, err := h.startedCall(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	err = h.store.RetryCall(c.Request().Context(), call.ID)
	if errors.Is(err, store.ErrConflict) {
		return h.renderNotice(c, http.StatusConflict, call.ID, err.Error())
	}
	if err != nil {
		return err
	}
	h.audit(c, "call.retried", call.ID, nil)
	return c.Redirect(http.StatusSeeOther, "/calls/"+call.ID)
}
