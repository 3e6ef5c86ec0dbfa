package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// adminUsers lists the users with the add form.
func (h *Handler) adminUsers(c echo.Context) error {
	notice := adminNotices[c.QueryParam("done")]
	if f, ok := userNotices[c.QueryParam("done")]; ok {
		notice = strings.ReplaceAll(f, "NAME", c.QueryParam("user"))
	}
	return h.renderUsers(c, http.StatusOK, views.AdminUsersVM{Notice: notice})
}

// userNotices say what the last action on a user did; NAME is the user.
var userNotices = map[string]string{
	"user-added":    "Added NAME. They can sign in now.",
	"user-disabled": "Disabled NAME here: their sessions and API tokens stop working at their next request, and an identity provider cannot enable them again.",
	"user-enabled":  "Enabled NAME again: they can sign in and use their API tokens.",
	"admin-granted": "NAME is an administrator now.",
	"admin-revoked": "NAME is no longer an administrator.",
	"password-set":  "Set a new password for NAME. Tell them over a channel you trust.",
}

func userDone(c echo.Context, done, name string) error {
	return c.Redirect(http.StatusSeeOther, "/admin/users?"+url.Values{"done": {done}, "user": {name}}.Encode())
}

func (h *Handler) renderUsers(c echo.Context, status int, vm views.AdminUsersVM) error {
	users, err := h.store.Users(c.Request().Context())
	if err != nil {
		return err
	}
	contacts, err := h.store.Contacts(c.Request().Context())
	if err != nil {
		return err
	}
	issuers, err := h.store.SignOnIssuers(c.Request().Context())
	if err != nil {
		return err
	}
	disabledHere, err := h.store.DisabledHere(c.Request().Context())
	if err != nil {
		return err
	}
	for _, u := range users {
		vm.Users = append(vm.Users, views.AdminUserVM{
			SignsInWith: h.signsInWith(u, issuers[u.ID]), SignOn: issuers[u.ID] != "",
			Name: u.Name, IsAdmin: u.IsAdmin, Disabled: u.Disabled, DisabledHere: disabledHere[u.Name], Password: u.PasswordHash != nil,
			Created: u.CreatedAt, Self: u.Name == h.person(c), Base: "/admin/users/" + url.PathEscape(u.Name),
			Email: contacts[u.Name].Email,
		})
	}
	return render(c, status, views.AdminUsersPage(vm))
}

// adminUserCreate adds a user.
func (h *Handler) adminUserCreate(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	admin := c.FormValue("admin") != ""
	email := strings.TrimSpace(c.FormValue("email"))
	if _, err := store.CheckEmail(email); err != nil {
		return h.renderUsers(c, http.StatusUnprocessableEntity, views.AdminUsersVM{
			NewName: name, NewAdmin: admin, NewEmail: email, Error: err.Error()})
	}
	_, err := h.store.CreateUser(c.Request().Context(), name, c.FormValue("password"), admin)
	if err == nil && email != "" {
		err = h.store.SetEmail(c.Request().Context(), name, email)
	}
	var se *store.Error
	switch {
	case errors.Is(err, store.ErrConflict):
		return h.renderUsers(c, http.StatusUnprocessableEntity, views.AdminUsersVM{
			NewName: name, NewAdmin: admin, Error: "A user named " + name + " already exists."})
	case errors.Is(err, store.ErrInvalid) && errors.As(err, &se):
		msg := se.Message
		if strings.HasPrefix(msg, "user ") {
			msg = "Give a name of letters, digits, '.', '_', '@' or '-', starting with a letter or digit."
		}
		return h.renderUsers(c, http.StatusUnprocessableEntity, views.AdminUsersVM{NewName: name, NewAdmin: admin, Error: msg})
	case err != nil:
		return err
	}
	h.audit(c, "user.added", name, map[string]any{"admin": admin})
	return userDone(c, "user-added", name)
}

// adminUserDisable disables or enables a user; a disabled user's session
// and tokens stop working at their next request.
func (h *Handler) adminUserDisable(c echo.Context) error {
	name := c.Param("name")
	if name == h.person(c) {
		return h.renderUsers(c, http.StatusConflict, views.AdminUsersVM{Error: "You cannot disable yourself."})
	}
	disabled := c.FormValue("disabled") == "true"
	if err := h.store.SetUserDisabled(c.Request().Context(), name, disabled); err != nil {
		return err
	}
	h.audit(c, map[bool]string{true: "user.disabled", false: "user.enabled"}[disabled], name, nil)
	return userDone(c, map[bool]string{true: "user-disabled", false: "user-enabled"}[disabled], name)
}

// adminUserAdmin grants or takes away admin rights.
func (h *Handler) adminUserAdmin(c echo.Context) error {
	name := c.Param("name")
	if name == h.person(c) {
		return h.renderUsers(c, http.StatusConflict, views.AdminUsersVM{Error: "You cannot change your own admin rights."})
	}
	admin := c.FormValue("admin") == "true"
	if err := h.store.SetUserAdmin(c.Request().Context(), name, admin); err != nil {
		return err
	}
	h.audit(c, map[bool]string{true: "user.admin_granted", false: "user.admin_revoked"}[admin], name, nil)
	return userDone(c, map[bool]string{true: "admin-granted", false: "admin-revoked"}[admin], name)
}

// adminUserPassword sets a new password for a user.
func (h *Handler) adminUserPassword(c echo.Context) error {
	name := c.Param("name")
	err := h.store.SetUserPassword(c.Request().Context(), name, c.FormValue("password"))
	var se *store.Error
	if errors.Is(err, store.ErrInvalid) && errors.As(err, &se) {
		return h.renderUsers(c, http.StatusUnprocessableEntity, views.AdminUsersVM{Error: se.Message})
	}
	if err != nil {
		return err
	}
	h.audit(c, "user.password_reset", name, nil)
	return userDone(c, "password-set", name)
}
