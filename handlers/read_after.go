package handlers

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// readAfterCookie carries where the primary's log stood after the
// person's last write, so that every instance reads their lists from the
// replica only once it has replayed that far. It says nothing secret: a
// changed value costs its holder stale lists of their own, or reads from
// the primary.
const readAfterCookie = "rounds_read_after"

// lastWrites remembers, per person, where the log stood after their last
// write on this instance: for programs that keep no cookies.
type lastWrites struct {
	mu sync.Mutex
	m  map[string]store.LSN
}

func (w *lastWrites) get(name string) store.LSN {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[name]
}

func (w *lastWrites) note(name string, lsn store.LSN) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]store.LSN{}
	}
	w.m[name] = max(w.m[name], lsn)
}

// readYourWrites, with a read replica, tells the store what a request's
// lists must see (store.ReadAfter): the person's last write, from their
// cookie or this instance's memory. A request that may have written
// (anything but GET and HEAD) from a signed-in person that succeeds
// learns where the primary's log stands as its response goes out, and
// hands that on.
func (h *Handler) readYourWrites(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !h.store.HasReplica() {
			return next(c)
		}
		req := c.Request()
		var after store.LSN
		if ck, err := req.Cookie(readAfterCookie); err == nil {
			after, _ = store.ParseLSN(ck.Value)
		}
		u := user(c)
		if u != nil {
			after = max(after, h.writes.get(u.Name))
		}
		c.SetRequest(req.WithContext(store.ReadAfter(req.Context(), after)))
		if u == nil || req.Method == http.MethodGet || req.Method == http.MethodHead {
			// Only a signed-in person's writes show in lists of theirs (not
			// the demo server's requests, nor a sign-in).
			return next(c)
		}
		res := c.Response()
		res.Before(func() {
			if res.Status >= http.StatusBadRequest {
				return
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(req.Context()), 2*time.Second)
			defer cancel()
			lsn, err := h.store.WriteLSN(ctx)
			if err != nil {
				// The lists then read the primary only if the replica lags.
				h.log.WarnContext(req.Context(), "reading the position of a write", "err", err)
				return
			}
			h.writes.note(u.Name, lsn)
			http.SetCookie(res, &http.Cookie{Name: readAfterCookie, Value: lsn.String(), Path: "/", MaxAge: 600,
				HttpOnly: true, Secure: h.auth.SecureCookies, SameSite: http.SameSiteLaxMode})
		})
		return next(c)
	}
}
