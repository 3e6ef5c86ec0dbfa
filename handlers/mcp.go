package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/agents"
	"github.com/mcp-rounds/rounds/store"
)

// mcp serves the agents' front door, /mcp/{server}: every registered
// server as an MCP server of its own (package agents). It is not a page:
// no session cookie, no CSRF, only Authorization: Bearer, which the door
// checks itself.
func (h *Handler) mcp(c echo.Context) error {
	r := agents.WithClientIP(c.Request(), c.RealIP())
	r = agents.WithUserCheck(r, func(u *store.User) (*store.User, error) { return h.checkSignOn(c, u) })
	h.agents.ServeHTTP(c.Response(), r)
	return nil
}

// isMCP reports whether path is the front door's.
func isMCP(path string) bool { return strings.HasPrefix(path, "/mcp/") }
