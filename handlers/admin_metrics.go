package handlers

import (
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// observe gives each request an id, puts it (and the call id, on call
// routes) on every log line of the request, and records the request's
// duration by route in the metrics and the log.
func (h *Handler) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		id := requestID(req.Header.Get(echo.HeaderXRequestID))
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		attrs := []slog.Attr{slog.String("request_id", id)}
		route := c.Path()
		if callID := c.Param("id"); callID != "" && strings.Contains(route, "/calls/:id") {
			attrs = append(attrs, slog.String("call_id", callID))
		}
		c.SetRequest(req.WithContext(withLogAttrs(req.Context(), attrs...)))

		if err := next(c); err != nil {
			c.Error(err)
		}
		d := time.Since(start)
		status := c.Response().Status
		if route == "" {
			route = "unmatched"
		}
		h.settings.Metrics.ObserveHTTP(req.Method, route, status, d)
		if route != "/healthz" && route != "/readyz" { // probes every few seconds: metrics only
			h.log.InfoContext(c.Request().Context(), "request", "method", req.Method, "route", route,
				"path", req.URL.Path, "status", status, "duration_ms", d.Milliseconds())
		}
		return nil
	}
}

// metricsEndpoint serves /metrics ahead of sign-in, since a scraper has no
// session: to the addresses in METRICS_ALLOW, or with an admin's API
// token. Anyone else gets the 404 of a page that does not exist.
func (h *Handler) metricsEndpoint(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().URL.Path != "/metrics" {
			return next(c)
		}
		m := h.settings.Metrics
		if m == nil || c.Request().Method != http.MethodGet {
			return echo.ErrNotFound
		}
		ok, err := h.mayScrape(c)
		if err != nil {
			return err
		}
		if !ok {
			return echo.ErrNotFound
		}
		m.Handler().ServeHTTP(c.Response(), c.Request())
		return nil
	}
}

func (h *Handler) mayScrape(c echo.Context) (bool, error) {
	if token, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer "); ok {
		u, err := h.store.UserByToken(c.Request().Context(), strings.TrimSpace(token))
		if err == nil {
			u, err = h.checkSignOn(c, u)
		}
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return u.IsAdmin, nil
	}
	addr, err := netip.ParseAddr(c.RealIP())
	return err == nil && h.settings.Metrics.Allowed(addr), nil
}
