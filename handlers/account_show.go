package handlers

import (
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// accountShow is the signed-in person's account page.
func (h *Handler) accountShow(c echo.Context) error {
	vm, err := h.accountVM(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AccountPage(*vm))
}

// accountVM is the account page as it stands, for showing or re-rendering
// with a section's refusal.
func (h *Handler) accountVM(c echo.Context) (*views.AccountVM, error) {
	u := user(c)
	sessions, err := h.accountSessionsVM(c)
	if err != nil {
		return nil, err
	}
	conns, err := h.connectionRows(c.Request().Context(), u.Name, func(c store.Connection) string {
		return "/servers/" + url.PathEscape(c.Server) + "/disconnect"
	})
	if err != nil {
		return nil, err
	}
	issuer, err := h.store.SignOnIssuer(c.Request().Context(), u.ID)
	if err != nil {
		return nil, err
	}
	teams, err := h.accountTeams(c, u)
	if err != nil {
		return nil, err
	}
	agents, err := h.accountAgents(c)
	if err != nil {
		return nil, err
	}
	vm := &views.AccountVM{
		SignsInWith: h.signsInWith(*u, issuer),
		Teams:       teams,
		Connections: conns,
		Agents:      agents,
		AgentsShown: h.authServer != nil,
		Sessions:    sessions,
		Name:        u.Name,
		IsAdmin:     u.IsAdmin,
		Since:       u.CreatedAt,
		Flash:       flashFromQuery(c),
		Zone:        views.ZoneVM{Value: u.TimeZone, Showing: views.ZoneOf(c.Request().Context())},
		Calls:       views.AccountCallsVM{RetentionDays: int(h.settings.Retention / (24 * time.Hour))},
	}
	mail, err := h.accountMailVM(c)
	if err != nil {
		return nil, err
	}
	vm.Mail = *mail
	if vm.Away, err = h.accountAwayVM(c); err != nil {
		return nil, err
	}
	return vm, nil
}

// accountNotices are the messages a redirect back to the account page may
// show (`/account?done=KEY`); sections add their own keys.
var accountNotices = map[string]string{
	"zone":               "Your time zone is saved.",
	"mail":               "Your e-mail settings are saved.",
	"calls_deleted":      "Every call you started was deleted, with its rounds and your answers.",
	"agent_disconnected": "The agent is disconnected: its tokens no longer work.",
	"away":               "You are away: your rounds go to the person you named until you are back.",
	"back":               "You are back: your rounds are yours again.",
}

func flashFromQuery(c echo.Context) string {
	return accountNotices[c.QueryParam("done")]
}
