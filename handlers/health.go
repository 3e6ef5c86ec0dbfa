package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// healthz answers as soon as the process serves HTTP.
func (h *Handler) healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// readyz answers once the database does.
func (h *Handler) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := h.store.Pool().Ping(ctx); err != nil {
		return c.String(http.StatusServiceUnavailable, "database unavailable\n")
	}
	return c.String(http.StatusOK, "ready\n")
}
