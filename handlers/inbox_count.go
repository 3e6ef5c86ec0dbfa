package handlers

import "github.com/labstack/echo/v4"

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
