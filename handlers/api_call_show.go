package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// apiCallShow returns a call: GET /api/v1/calls/{id}.
func (h *Handler) apiCallShow(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.ownedCall(ctx, c.Param("id"), h.person(c))
	if err != nil {
		return err
	}
	rounds, err := h.store.Rounds(ctx, call.ID)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, newAPICall(call, rounds))
}
