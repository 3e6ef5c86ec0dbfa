package handlers

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// Long polling: a request may wait for a call to change instead of asking
// again and again. Waits are capped in length and in number per instance.
const (
	maxWait        = 30 * time.Second
	maxHeldWaiters = 1000
)

// waitParams reads ?wait=5s from the request; zero means do not wait.
func waitParams(c echo.Context) (time.Duration, error) {
	v := c.QueryParam("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, echo.NewHTTPError(http.StatusBadRequest, "wait must be a duration such as 5s.")
	}
	return min(d, maxWait), nil
}

// waitForCall holds the request until changed says the call has moved on,
// or wait runs out, and returns the call as it then is. Changes are heard
// through Postgres notifications from any instance; without them (or past
// the cap on held requests) it answers at once.
func (h *Handler) waitForCall(ctx context.Context, call *store.Call, wait time.Duration, changed func(*store.Call) bool) (*store.Call, error) {
	if wait == 0 || h.notifier == nil || changed(call) || call.Finished() {
		return call, nil
	}
	id := call.ID
	var err error
	select {
	case h.held <- struct{}{}:
		defer func() { <-h.held }()
	default:
		return call, nil // too many held already: answer now, the client asks again
	}
	notes, stop := h.notifier.Subscribe(id)
	defer stop()
	// Read again now that we listen, so no change slips in between.
	if call, err = h.store.Call(ctx, id); err != nil || changed(call) || call.Finished() {
		return call, err
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	// A periodic look covers notifications lost while reconnecting.
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return call, nil
		case <-h.draining:
			return call, nil
		case <-deadline.C:
			return h.store.Call(ctx, id)
		case <-tick.C:
		case <-notes:
		}
		if call, err = h.store.Call(ctx, id); err != nil || changed(call) || call.Finished() {
			return call, err
		}
	}
}

// afterSeq is the API's condition: a round newer than after_seq, or an end.
func afterSeq(c echo.Context) (func(*store.Call) bool, error) {
	v := c.QueryParam("after_seq")
	if v == "" {
		return func(*store.Call) bool { return true }, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusBadRequest, "after_seq must be a whole number.")
	}
	return func(call *store.Call) bool {
		return call.Status == store.CallInputRequired && call.CurrentSeq > n
	}, nil
}
