package handlers

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// callWatch is held by an open round page (htmx) until its round is no
// longer waiting for answers: answered in another tab, expired, cancelled
// by an administrator. It then tells the person so, before they type into
// a form nobody will read; until then it answers with itself, to be asked
// again.
func (h *Handler) callWatch(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.ownedCall(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	seq, err := strconv.Atoi(c.QueryParam("seq"))
	if err != nil || seq < 1 {
		return echo.NewHTTPError(http.StatusBadRequest, "seq must be a round number.")
	}
	wait, err := waitParams(c)
	if err != nil {
		return err
	}
	waiting := func(call *store.Call) bool {
		return call.Status == store.CallInputRequired && call.CurrentSeq == seq
	}
	if call, err = h.waitForCall(ctx, call, wait, func(call *store.Call) bool { return !waiting(call) }); err != nil {
		return err
	}
	if waiting(call) {
		// Also a round past its deadline that the expiry job has not
		// reached yet: it can no longer be answered.
		rounds, err := h.store.RoundsFrom(ctx, call.ID, seq)
		if err != nil {
			return err
		}
		if len(rounds) == 0 || !rounds[0].ExpiresAt.Before(time.Now()) {
			return render(c, http.StatusOK, views.RoundWatch(watchHref(call.ID, seq), true))
		}
		return render(c, http.StatusOK, views.RoundGone(call.ID, "This round has passed its deadline: the server no longer waits for its answers."))
	}
	rounds, err := h.store.RoundsFrom(ctx, call.ID, seq)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.RoundGone(call.ID, goneMessage(call, rounds)))
}

// watchHref is where a round page asks whether its round still waits.
func watchHref(callID string, seq int) string {
	return "/calls/" + url.PathEscape(callID) + "/watch?wait=25s&seq=" + strconv.Itoa(seq)
}

// goneMessage says why the round a page shows can no longer be answered.
func goneMessage(call *store.Call, rounds []store.Round) string {
	status := ""
	if len(rounds) > 0 {
		status = rounds[0].Status
	}
	switch {
	case status == store.RoundAnswered:
		return "This round was answered meanwhile, in another tab or window."
	case status == store.RoundExpired:
		return store.RoundExpiredMessage
	case status == store.RoundCancelled:
		return "This round was cancelled by an administrator."
	case call.Status == store.CallCancelled:
		return "This call was cancelled."
	case call.Status == store.CallFailed:
		return "This call failed meanwhile."
	}
	return "This round can no longer be answered."
}
