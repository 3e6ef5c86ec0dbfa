package handlers

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/slack"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// slackInteractions is where Slack posts interactions (docs/slack.md).
const slackInteractions = "/slack/interactions"

// slackLinkShow asks the signed-in person to link the Slack user of the
// link token to their account. Someone not signed in is sent to sign in
// first, as for any page: the link itself signs nobody in.
func (h *Handler) slackLinkShow(c echo.Context) error {
	vm := views.SlackLinkVM{Person: h.person(c), Token: c.QueryParam("t")}
	if _, err := slack.ReadLink(h.slack.LinkKey(), vm.Token, time.Now()); err != nil {
		vm.Error = err.Error()
		return render(c, http.StatusBadRequest, views.SlackLinkPage(vm))
	}
	return render(c, http.StatusOK, views.SlackLinkPage(vm))
}

// slackLink links the Slack user of the link token to the signed-in
// person's account, once.
func (h *Handler) slackLink(c echo.Context) error {
	ctx := c.Request().Context()
	vm := views.SlackLinkVM{Person: h.person(c)}
	l, err := slack.ReadLink(h.slack.LinkKey(), c.FormValue("t"), time.Now())
	if err == nil {
		err = h.store.SpendSlackLink(ctx, l.Nonce, l.Expires)
	}
	if err == nil {
		err = h.store.SetSlackUser(ctx, vm.Person, l.SlackUser)
	}
	var se *store.Error
	switch {
	case errors.Is(err, slack.ErrLinkInvalid):
		vm.Error = err.Error()
		return render(c, http.StatusBadRequest, views.SlackLinkPage(vm))
	case errors.As(err, &se) && se.Kind != store.ErrNotFound:
		vm.Error = se.Message
		return render(c, http.StatusConflict, views.SlackLinkPage(vm))
	case err != nil:
		return err
	}
	h.audit(c, "account.slack_linked", vm.Person, map[string]any{"slack_user": l.SlackUser})
	vm.Linked = true
	return render(c, http.StatusOK, views.SlackLinkPage(vm))
}
