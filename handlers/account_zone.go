package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/views"
)

// accountZone sets the time zone the person sees times in: for use
// without JavaScript, or to differ from the browser's.
func (h *Handler) accountZone(c echo.Context) error {
	u := user(c)
	name := strings.TrimSpace(c.FormValue("zone"))
	if name == "UTC" || strings.EqualFold(name, "utc") {
		name = "UTC"
	}
	if _, ok := loadZone(name); name != "" && !ok {
		return render(c, http.StatusUnprocessableEntity, views.AccountPage(views.AccountVM{
			Name: u.Name, IsAdmin: u.IsAdmin, Since: u.CreatedAt,
			Zone: views.ZoneVM{Value: name, Showing: views.ZoneOf(c.Request().Context()),
				Error: "This is not a time zone this server knows. Use a name such as Europe/Lisbon, or leave it empty."},
		}))
	}
	if err := h.store.SetUserTimeZone(c.Request().Context(), u.ID, name); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/account?done=zone")
}
