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
	// settleWait is how long a page's POST that sends a call on waits for
	// the server's reply before its redirect (see settle).
	settleWait = 3 * time.Second
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
	if wait == 0 || changed(call) || call.Finished() {
		return call, nil
	}
	w := h.watch(call.ID, wait)
	if w == nil {
		return call, nil
	}
	defer w.stop()
	// Read again now that we listen, so no change slips in between.
	call, err := h.store.CallShown(ctx, call.ID)
	if err != nil {
		return nil, err
	}
	call, _, err = w.until(ctx, call, changed)
	return call, err
}

// watcher is a held request listening for one call's changes.
type watcher struct {
	h        *Handler
	id       string
	wait     time.Duration
	notes    <-chan struct{}
	latest   func() *store.CallNote
	stop     func()
	released bool
}

// watch starts listening for a call's changes before it is read, so no
// change falls between the read and the wait. It returns nil when there
// is nothing to wait with (no notifications, or too many held already:
// answer now, the client asks again).
func (h *Handler) watch(id string, wait time.Duration) *watcher {
	if wait == 0 || h.notifier == nil {
		return nil
	}
	select {
	case h.held <- struct{}{}:
	default:
		return nil
	}
	notes, latest, stop := h.notifier.Watch(id)
	w := &watcher{h: h, id: id, wait: wait, notes: notes, latest: latest}
	w.stop = func() {
		stop()
		if !w.released {
			w.released = true
			<-h.held
		}
	}
	return w
}

// until waits until changed says the call has moved on or the wait runs
// out, and returns the call as it then is. When a change notification
// carried the whole state, the call is taken from it, with no read, and
// the note is returned too (it holds the current round's questions).
func (w *watcher) until(ctx context.Context, call *store.Call, changed func(*store.Call) bool) (*store.Call, *store.CallNote, error) {
	if changed(call) || call.Finished() {
		return call, nil, nil
	}
	deadline := time.NewTimer(w.wait)
	defer deadline.Stop()
	// A periodic look covers notifications lost while reconnecting.
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	var err error
	for {
		select {
		case <-ctx.Done():
			return call, nil, nil
		case <-w.h.draining:
			return call, nil, nil
		case <-deadline.C:
			call, err = w.h.store.CallShown(ctx, w.id)
			return call, nil, err
		case <-tick.C:
		case <-w.notes:
			if note := w.latest(); note != nil {
				if note.UpdatedAt.Before(call.UpdatedAt) {
					// Announced after its commit, a note can arrive after a
					// later one from another instance: it is not news.
					continue
				}
				next := *call
				next.Status, next.CurrentSeq, next.Error = note.Status, note.Seq, note.Error
				if note.Status == store.CallQueued && call.Status == store.CallRunning && note.Seq == call.CurrentSeq {
					// A note (progress) of the request out: still running.
					next.Status = store.CallRunning
				}
				next.Retryable, next.UpdatedAt, next.Result, next.Progress = note.Retryable, note.UpdatedAt, note.Result, note.Progress
				if changed(&next) || next.Finished() {
					return &next, note, nil
				}
				call = &next
				continue
			}
		}
		if call, err = w.h.store.CallShown(ctx, w.id); err != nil || changed(call) || call.Finished() {
			return call, nil, err
		}
	}
}

// settle holds a page's POST that just sent call on (an answer, a start)
// until the call moves on again (the server's next round, its result, an
// error, a retry) or settleWait passes. The page the POST then leads to
// shows where the call stands, with no live request to learn it; the
// notifications tell all, so settling reads nothing. A nil watcher (no
// notifications, too many held) does not wait.
func (w *watcher) settle(ctx context.Context, call *store.Call) {
	if w == nil || call.Finished() {
		return
	}
	deadline := time.NewTimer(w.wait)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.h.draining:
			return
		case <-deadline.C:
			return
		case <-w.notes:
			note := w.latest()
			if note == nil || note.UpdatedAt.After(call.UpdatedAt) ||
				(note.Status != store.CallQueued && note.Status != store.CallRunning) {
				return
			}
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
