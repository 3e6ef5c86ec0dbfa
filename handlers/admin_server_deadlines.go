package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

func (h *Handler) adminDeadlinesVM(ctx context.Context, server string) (views.AdminDeadlinesVM, error) {
	d, err := h.store.ServerDeadlines(ctx, server)
	if err != nil {
		return views.AdminDeadlinesVM{}, err
	}
	return views.AdminDeadlinesVM{Action: "/admin/servers/" + url.PathEscape(server) + "/deadlines",
		EscalateAfter: shortDuration(d.EscalateAfter), EscalateTo: d.EscalateTo, OnExpiry: d.OnExpiry}, nil
}

// adminServerDeadlines saves what happens to a server's rounds nobody
// answers: whom they escalate to, after how long, and what Rounds answers
// at the deadline.
func (h *Handler) adminServerDeadlines(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("server")
	vm, err := h.adminServerVM(ctx, name)
	if err != nil {
		return err
	}
	vm.Deadlines.EscalateAfter = strings.TrimSpace(c.FormValue("escalate_after"))
	vm.Deadlines.EscalateTo = strings.TrimSpace(c.FormValue("escalate_to"))
	vm.Deadlines.OnExpiry = c.FormValue("on_expiry")
	d := store.Deadlines{EscalateTo: vm.Deadlines.EscalateTo, OnExpiry: vm.Deadlines.OnExpiry}
	if vm.Deadlines.EscalateAfter != "" {
		d.EscalateAfter, err = time.ParseDuration(strings.ReplaceAll(vm.Deadlines.EscalateAfter, " ", ""))
		if err != nil || d.EscalateAfter < time.Second {
			vm.Deadlines.Error = "Give the time to wait as a duration such as 30m or 2h, or leave it empty."
			return render(c, http.StatusUnprocessableEntity, views.AdminServerPage(*vm))
		}
	}
	err = h.store.SetServerDeadlines(ctx, name, d)
	var se *store.Error
	if errors.As(err, &se) && errors.Is(err, store.ErrInvalid) {
		vm.Deadlines.Error = se.Message
		return render(c, http.StatusUnprocessableEntity, views.AdminServerPage(*vm))
	}
	if err != nil {
		return err
	}
	h.audit(c, "server.deadlines", name, map[string]any{"escalate_after": d.EscalateAfter.String(),
		"escalate_to": d.EscalateTo, "on_expiry": d.OnExpiry})
	return c.Redirect(http.StatusSeeOther, "/admin/servers/"+url.PathEscape(name)+"?done=saved")
}
