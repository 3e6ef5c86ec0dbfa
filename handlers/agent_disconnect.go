package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/views"
)

// agentDisconnect revokes one of the person's connected agents: its grant
// and every token it holds, at once.
func (h *Handler) agentDisconnect(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.NewHTTPError(http.StatusNotFound, "There is no such connected agent.")
	}
	if err := h.authServer.Disconnect(c.Request().Context(), user(c), id, c.RealIP()); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/account?done=agent_disconnected#account-agents")
}

// accountAgents are the account page's connected agents; none without an
// authorization server.
func (h *Handler) accountAgents(c echo.Context) ([]views.AgentRow, error) {
	if h.authServer == nil {
		return nil, nil
	}
	grants, err := h.authServer.Agents(c.Request().Context(), user(c).ID)
	if err != nil {
		return nil, err
	}
	rows := make([]views.AgentRow, 0, len(grants))
	for _, g := range grants {
		rows = append(rows, views.AgentRow{ClientName: g.ClientName, ClientID: g.ClientID, Unverified: !g.MetadataURL,
			Servers: strings.Join(g.Servers, ", "), Connected: g.CreatedAt, LastUsed: g.LastUsedAt,
			DisconnectHref: "/account/agents/" + strconv.FormatInt(g.ID, 10) + "/disconnect"})
	}
	return rows, nil
}
