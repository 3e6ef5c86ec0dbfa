package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// callAgain starts a call again over a 2025-11-25 session, with the same
// arguments, when its tool turned out to ask the handshake-era way. The
// person decides: the tool may have acted before it tried to ask.
func (h *Handler) callAgain(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.ownedCall(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	if !call.AsksOverSession || !call.Finished() {
		return h.renderNotice(c, http.StatusConflict, call.ID, "This call did not need a session, so it is not started again that way.")
	}
	// Through the engine, so that the server's approval rules apply again.
	again, err := h.createCall(ctx, store.NewCall{
		ServerID: call.ServerID, Owner: call.Owner, Method: call.Method, Target: call.Target,
		Arguments: call.Arguments, Protocol: mcpclient.ProtocolHandshake,
	})
	if err != nil {
		return err
	}
	h.audit(c, "call.started", again.ID, map[string]any{"server": call.ServerName, "tool": call.Target,
		"again": call.ID, "protocol": mcpclient.ProtocolHandshake})
	return c.Redirect(http.StatusSeeOther, "/calls/"+again.ID)
}
