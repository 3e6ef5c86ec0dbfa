package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// apiDeadlines reads a call's own escalation and on_expiry from the API's
// request; nil when it gives none.
func (h *Handler) apiDeadlines(ctx context.Context, req apiCallRequest) (*store.Deadlines, error) {
	d := store.Deadlines{EscalateTo: req.EscalateTo, OnExpiry: req.OnExpiry}
	if req.EscalateAfter != "" {
		after, err := time.ParseDuration(req.EscalateAfter)
		if err != nil || after <= 0 {
			return nil, echo.NewHTTPError(http.StatusUnprocessableEntity, `"escalate_after" must be a positive duration such as "30m" or "2h".`)
		}
		d.EscalateAfter = after
	}
	if d == (store.Deadlines{}) {
		return nil, nil
	}
	if err := h.store.CheckDeadlines(ctx, d); err != nil {
		return nil, err
	}
	return &d, nil
}
