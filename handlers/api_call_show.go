package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/apiv1"
	"github.com/mcp-rounds/rounds/store"
)

// apiCallShow returns a call: GET /api/v1/calls/{id}. With
// ?wait=5s&after_seq=N it holds the request until the call has a round
// newer than N or has ended, or the wait runs out.
func (h *Handler) apiCallShow(c echo.Context) error {
	ctx := c.Request().Context()
	wait, err := waitParams(c)
	if err != nil {
		return err
	}
	changed, err := afterSeq(c)
	if err != nil {
		return err
	}
	// Listen first, then read the call and its current round in one go:
	// a change after the read is heard, and its notification usually
	// carries all the answer needs.
	w := h.watch(c.Param("id"), wait)
	if w != nil {
		defer w.stop()
	}
	call, rounds, err := h.store.CallAndRounds(ctx, c.Param("id"), -1)
	if err != nil {
		return err
	}
	if ok, err := h.mayOpen(ctx, call); err != nil {
		return err
	} else if !ok {
		return notFoundErr("call")
	}
	return h.writeCallWaited(c, http.StatusOK, w, call, rounds, changed)
}

// writeCallWaited answers with call and rounds or, when w is set, with the
// call once changed says it has moved on or the wait runs out. A change
// heard with its round (as notifications carry it) costs no read.
func (h *Handler) writeCallWaited(c echo.Context, status int, w *watcher, call *store.Call, rounds []store.Round, changed func(*store.Call) bool) error {
	if w != nil {
		ctx := c.Request().Context()
		var note *store.CallNote
		var err error
		seq := call.CurrentSeq
		if call, note, err = w.until(ctx, call, changed); err != nil {
			return err
		}
		switch {
		case note != nil && note.Round != nil:
			rounds = []store.Round{{CallID: call.ID, Seq: note.Round.Seq, InputRequests: note.Round.InputRequests,
				ExpiresAt: note.Round.ExpiresAt, Status: note.Round.Status}}
		case call.CurrentSeq != seq && call.Status == store.CallInputRequired:
			if rounds, err = h.store.RoundsFrom(ctx, call.ID, call.CurrentSeq); err != nil {
				return err
			}
		}
	}
	if apiv1.WithRounds(call, rounds) {
		var err error
		if rounds, err = h.store.Rounds(c.Request().Context(), call.ID); err != nil {
			return err
		}
	}
	if err := h.store.WithApproval(c.Request().Context(), call); err != nil {
		return err
	}
	return writeJSON(c, status, h.apiCallOf(call, rounds))
}
