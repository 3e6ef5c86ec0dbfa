package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// apiCallShow returns a call: GET /api/v1/calls/{id}. With
// ?wait=5s&after_seq=N it holds the request until the call has a round
// newer than N or has ended, or the wait runs out.
func (h *Handler) apiCallShow(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.ownedCall(ctx, c.Param("id"), h.person(c))
	if err != nil {
		return err
	}
	wait, err := waitParams(c)
	if err != nil {
		return err
	}
	if wait > 0 {
		changed, err := afterSeq(c)
		if err != nil {
			return err
		}
		if call, err = h.waitForCall(ctx, call, wait, changed); err != nil {
			return err
		}
	}
	var rounds []store.Round
	if call.Status == store.CallInputRequired {
		if rounds, err = h.store.RoundsFrom(ctx, call.ID, call.CurrentSeq); err != nil {
			return err
		}
	}
	return writeJSON(c, http.StatusOK, h.apiCallOf(call, rounds))
}
