package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/mssola/useragent"

	"github.com/mcp-rounds/rounds/views"
)

func init() {
	accountNotices["session_ended"] = "That session has ended. Whoever used it must sign in again."
}

// accountSessionsVM lists where the signed-in person is signed in.
func (h *Handler) accountSessionsVM(c echo.Context) (views.AccountSessionsVM, error) {
	current, ok := c.Get("sessionID").(int64)
	if !ok {
		return views.AccountSessionsVM{SingleSignOn: true}, nil
	}
	list, err := h.store.Sessions(c.Request().Context(), user(c).ID)
	if err != nil {
		return views.AccountSessionsVM{}, err
	}
	var vm views.AccountSessionsVM
	for _, s := range list {
		vm.Sessions = append(vm.Sessions, views.SessionVM{
			Device: device(s.UserAgent), Address: s.Address, SignedIn: s.CreatedAt, LastSeen: s.LastSeenAt,
			Current: s.ID == current, EndHref: fmt.Sprintf("/account/sessions/%d/end", s.ID),
		})
	}
	return vm, nil
}

// device names a browser and system from a User-Agent, for people to
// recognise their own sessions.
func device(userAgent string) string {
	if userAgent == "" {
		return "Unknown device"
	}
	ua := useragent.New(userAgent)
	name, version := ua.Browser()
	if name == "" {
		return "Unknown device"
	}
	out := name
	if v, _, _ := strings.Cut(version, "."); v != "" { // 120.0.6099.71 → 120
		out += " " + v
	}
	if os := ua.OS(); os != "" {
		out += " on " + os
	}
	if ua.Mobile() {
		out += " (mobile)"
	}
	return out
}

// accountSessionEnd ends one of the person's sessions; ending the one in
// use signs this browser out.
func (h *Handler) accountSessionEnd(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return notFoundErr("session")
	}
	if current, _ := c.Get("sessionID").(int64); current == id {
		h.audit(c, "sign_out", "", nil)
		return h.endCookieSession(c)
	}
	if err := h.store.EndUserSession(c.Request().Context(), user(c).ID, id); err != nil {
		return err
	}
	h.audit(c, "session.ended", h.person(c), map[string]any{"session": id})
	return c.Redirect(http.StatusSeeOther, "/account?done=session_ended")
}

// accountSessionsEnd signs the person out everywhere, this browser too.
func (h *Handler) accountSessionsEnd(c echo.Context) error {
	n, err := h.store.EndUserSessions(c.Request().Context(), user(c).ID)
	if err != nil {
		return err
	}
	h.audit(c, "sign_out.everywhere", h.person(c), map[string]any{"sessions": n})
	return h.endCookieSession(c)
}
