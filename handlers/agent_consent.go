package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// msgConsentGone is shown for a consent request that expired or was
// answered.
const msgConsentGone = "This request to connect an agent has expired or was answered already. Start again from the agent."

// agentConsentShow asks the signed-in person whether an agent may use
// servers through Rounds as them (OAuth consent). op sends the browser
// here from /authorize; someone not signed in signs in first and comes back.
func (h *Handler) agentConsentShow(c echo.Context) error {
	r, err := h.authServer.Pending(c.Request().Context(), c.QueryParam("id"))
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, msgConsentGone)
	}
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ConsentPage(views.ConsentVM{
		ID: r.ID, ClientName: r.ClientName, ClientID: r.ClientID, Host: r.Host, Unverified: r.Unverified,
		Servers: r.Servers, RedirectHost: r.RedirectHost, UserName: user(c).Name,
	}))
}

// agentConsentAnswer records Allow or Deny and sends the browser on: to
// op's callback, which gives the agent its code, or back to the agent with
// error=access_denied.
func (h *Handler) agentConsentAnswer(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.FormValue("id")
	var href string
	var err error
	allowed := c.FormValue("decision") == "allow"
	if allowed {
		href, err = h.authServer.Approve(ctx, id, user(c), c.RealIP())
	} else {
		href, err = h.authServer.Deny(ctx, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, msgConsentGone)
	}
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ConsentAnsweredPage(allowed, href))
}
