package handlers

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// apiRoundAnswer answers a round: POST /api/v1/calls/{id}/rounds/{seq}.
// The answers are checked as the form checks them; content that fits is
// stored, and sent, exactly as given.
func (h *Handler) apiRoundAnswer(c echo.Context) error {
	ctx := c.Request().Context()
	seq, err := seqParam(c)
	if err != nil {
		return err
	}
	wait, err := waitParams(c)
	if err != nil {
		return err
	}
	var body struct {
		InputResponses json.RawMessage `json:"inputResponses"`
	}
	if err := json.NewDecoder(c.Request().Body).Decode(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The body must be a JSON object with inputResponses.")
	}
	// With ?wait, the answer is held until the next round or the end, so
	// a client answers and hears what follows in one request. Listening
	// starts before the answer is stored, so no change slips by.
	w := h.watch(c.Param("id"), wait)
	if w != nil {
		defer w.stop()
	}
	call, r, a, err := h.answer(c, seq, func(call *store.Call, r *store.Round) (*round.Answer, error) {
		return round.APIAnswer(call, r, body.InputResponses)
	})
	switch {
	case errors.Is(err, errUnfit):
		return writeJSON(c, http.StatusUnprocessableEntity, apiError{Error: apiMessage{
			Message: "Some answers do not fit: " + a.Misfit.String(), Fields: a.Misfit,
		}})
	case errors.Is(err, round.ErrNotWaiting):
		return echo.NewHTTPError(http.StatusConflict, h.notWaiting(ctx, &store.Call{ID: c.Param("id")}, r))
	case err != nil:
		return err
	}
	return h.writeCallWaited(c, http.StatusAccepted, w, call, nil, func(call *store.Call) bool {
		return call.Status == store.CallInputRequired && call.CurrentSeq > seq
	})
}

// apiCallRetry retries a failed call with its stored answers.
func (h *Handler) apiCallRetry(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.startedCall(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	if err := h.store.RetryCall(ctx, call.ID); err != nil {
		return err
	}
	h.audit(c, "call.retried", call.ID, map[string]any{"api": true})
	call, err = h.store.Call(ctx, call.ID)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusAccepted, h.apiCallOf(call, nil))
}
