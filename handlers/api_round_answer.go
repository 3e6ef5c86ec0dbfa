package handlers

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// apiRoundAnswer answers a round: POST /api/v1/calls/{id}/rounds/{seq}.
// The answers are checked as the form checks them; content that fits is
// stored, and sent, exactly as given.
func (h *Handler) apiRoundAnswer(c echo.Context) error {
	ctx := c.Request().Context()
	person := h.person(c)
	call, round, err := h.ownedRound(c, person)
	if err != nil {
		return err
	}
	var body struct {
		InputResponses json.RawMessage `json:"inputResponses"`
	}
	if err := json.NewDecoder(c.Request().Body).Decode(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The body must be a JSON object with inputResponses.")
	}
	if round.Status != store.RoundPending || round.Seq != call.CurrentSeq {
		return echo.NewHTTPError(http.StatusConflict, "This round was already answered, or is no longer current.")
	}
	qs, err := questionsOf(round)
	if err != nil {
		return err
	}
	withRoots(qs, call)
	if errs := checkAPIAnswers(qs, body.InputResponses); len(errs) > 0 {
		return writeJSON(c, http.StatusUnprocessableEntity, apiError{Error: apiMessage{
			Message: "Some answers do not fit: " + fieldErrorText(errs), Fields: errs,
		}})
	}
	// Roots are answered from the server's settings, not by the caller.
	responses, err := addRootsAnswers(qs, body.InputResponses)
	if err != nil {
		return err
	}
	if err := h.answerRound(ctx, call, round, qs, responses, person); err != nil {
		return err
	}
	h.auditAnswer(c, call, round.Seq, responses)
	call, err = h.store.Call(ctx, call.ID)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusAccepted, h.apiCallOf(call, nil))
}

// apiCallRetry retries a failed call with its stored answers.
func (h *Handler) apiCallRetry(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.ownedCall(ctx, c.Param("id"), h.person(c))
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
