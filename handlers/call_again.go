package handlers

import (
	"net/http"
	"strconv"
	"strings"

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
	again, err := h.store.CreateCall(ctx, store.NewCall{
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

// knownProtocol says whether a call may be started with protocol: a
// revision the client speaks, or "" or "auto" for the server's setting.
func knownProtocol(protocol string) bool {
	return protocol == "" || protocol == mcpclient.ProtocolAuto || mcpclient.KnownRevision(protocol)
}

// protocolChoices words the protocols a call may be started with, for an
// error: "auto" or a revision: "2026-07-28", … or "2024-11-05".
func protocolChoices() string {
	quoted := make([]string, len(mcpclient.Revisions))
	for i, r := range mcpclient.Revisions {
		quoted[i] = strconv.Quote(r)
	}
	last := len(quoted) - 1
	return `"` + mcpclient.ProtocolAuto + `" or a revision: ` + strings.Join(quoted[:last], ", ") + " or " + quoted[last]
}
