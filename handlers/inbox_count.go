package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/views"
)

// inboxCount is the navigation's count of waiting rounds, for htmx to
// refresh on a page left open.
func (h *Handler) inboxCount(c echo.Context) error {
	n := h.waiting(c, h.person(c))()
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, http.StatusOK, views.InboxCount(n))
}

// waiting counts the rounds waiting for a person, when a page asks for it
// (full pages do; fragments and redirects do not). A failure to count only
// leaves the count out.
func (h *Handler) waiting(c echo.Context, person string) func() int {
	return func() int {
		n, err := h.store.WaitingCount(c.Request().Context(), person)
		if err != nil {
			h.log.WarnContext(c.Request().Context(), "counting waiting rounds", "err", err)
			return 0
		}
		return n
	}
}

// countedWaiting gives the navigation a count already read, in the batch
// that read the page, so the layout does not ask again.
func countedWaiting(c echo.Context, n int) {
	ctx := c.Request().Context()
	if u, ok := views.CurrentUser(ctx); ok {
		u.Waiting = func() int { return n }
		c.SetRequest(c.Request().WithContext(views.WithUser(ctx, u)))
	}
}
