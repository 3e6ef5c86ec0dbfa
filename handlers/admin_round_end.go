package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// adminRoundExpire expires a pending round now; the call ends expired.
func (h *Handler) adminRoundExpire(c echo.Context) error {
	return h.adminRoundEnd(c, store.RoundExpired)
}

// adminRoundCancel cancels a pending round; the call ends cancelled.
func (h *Handler) adminRoundCancel(c echo.Context) error {
	return h.adminRoundEnd(c, store.RoundCancelled)
}

func (h *Handler) adminRoundEnd(c echo.Context, status string) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	seq, err := strconv.Atoi(c.Param("seq"))
	if err != nil || seq < 1 {
		return store.ErrNotFound
	}
	call, err := h.store.Call(ctx, id)
	if err != nil {
		return err
	}
	entry := h.auditEntry(c, h.person(c), "admin.round."+status, call.ID,
		map[string]any{"seq": seq, "server": call.ServerName, "owner": call.Owner})
	err = h.store.EndRound(ctx, call.ID, seq, status, entry)
	if errors.Is(err, store.ErrConflict) {
		return h.adminCallNotice(c, http.StatusConflict, call.ID, err.Error())
	}
	if err != nil {
		return err
	}
	h.log.InfoContext(ctx, "round ended by an admin", "seq", seq, "status", status)
	return c.Redirect(http.StatusSeeOther, "/admin/calls/"+call.ID+"?done="+status)
}

// adminCallRetry sends a failed call's last request again with its stored
// answers.
func (h *Handler) adminCallRetry(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.store.Call(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	err = h.store.RetryCall(ctx, call.ID)
	if errors.Is(err, store.ErrConflict) {
		return h.adminCallNotice(c, http.StatusConflict, call.ID, err.Error())
	}
	if err != nil {
		return err
	}
	h.audit(c, "admin.call.retried", call.ID, map[string]any{"server": call.ServerName, "owner": call.Owner})
	return c.Redirect(http.StatusSeeOther, "/admin/calls/"+call.ID+"?done=retried")
}

func (h *Handler) adminCallNotice(c echo.Context, status int, id, msg string) error {
	vm, err := h.adminCallVM(c.Request().Context(), id)
	if err != nil {
		return err
	}
	vm.ErrorNotice = msg
	return render(c, status, views.AdminCallPage(*vm))
}
