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

// adminTeams lists the teams with their members.
func (h *Handler) adminTeams(c echo.Context) error {
	return h.renderTeams(c, http.StatusOK, views.AdminTeamsVM{Notice: adminNotices[c.QueryParam("done")]})
}

func (h *Handler) renderTeams(c echo.Context, status int, vm views.AdminTeamsVM) error {
	ctx := c.Request().Context()
	teams, err := h.store.Teams(ctx)
	if err != nil {
		return err
	}
	users, err := h.store.Users(ctx)
	if err != nil {
		return err
	}
	channels := map[string]string{}
	if vm.Slack = h.slack != nil; vm.Slack {
		if channels, err = h.store.TeamChannels(ctx); err != nil {
			return err
		}
	}
	for _, t := range teams {
		vm.Teams = append(vm.Teams, views.AdminTeamVM{Name: t.Name, Members: t.Members, Base: "/admin/teams/" + url.PathEscape(t.Name),
			SlackChannel: channels[t.Name]})
	}
	for _, u := range users {
		if !u.Disabled {
			vm.Users = append(vm.Users, u.Name)
		}
	}
	return render(c, status, views.AdminTeamsPage(vm))
}

// teamError re-renders the teams page with what went wrong, or returns an
// error that is not the person's to fix.
func (h *Handler) teamError(c echo.Context, err error, vm views.AdminTeamsVM) error {
	var se *store.Error
	if !errors.As(err, &se) {
		return err
	}
	vm.Error = se.Message
	if errors.Is(err, store.ErrNotFound) {
		vm.Error = strings.ToUpper(se.Message[:1]) + se.Message[1:] + "."
	}
	return h.renderTeams(c, http.StatusUnprocessableEntity, vm)
}

// adminTeamCreate adds a team.
func (h *Handler) adminTeamCreate(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	if _, err := h.store.CreateTeam(c.Request().Context(), name); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return h.renderTeams(c, http.StatusUnprocessableEntity, views.AdminTeamsVM{NewName: name, Error: "A team named " + name + " already exists."})
		}
		return h.teamError(c, err, views.AdminTeamsVM{NewName: name})
	}
	h.audit(c, "team.added", name, nil)
	return c.Redirect(http.StatusSeeOther, "/admin/teams?done=team")
}

// adminTeamSlack sets the Slack channel a team's rounds are posted to;
// empty stops posting them.
func (h *Handler) adminTeamSlack(c echo.Context) error {
	team, channel := c.Param("team"), strings.TrimSpace(c.FormValue("channel"))
	if err := h.store.SetTeamChannel(c.Request().Context(), team, channel); err != nil {
		return h.teamError(c, err, views.AdminTeamsVM{})
	}
	h.audit(c, "team.slack_channel", team, map[string]any{"channel": channel})
	return c.Redirect(http.StatusSeeOther, "/admin/teams?done=saved")
}

// adminTeamMemberAdd adds a person to a team.
func (h *Handler) adminTeamMemberAdd(c echo.Context) error {
	team, name := c.Param("team"), strings.TrimSpace(c.FormValue("user"))
	if err := h.store.AddTeamMember(c.Request().Context(), team, name); err != nil {
		return h.teamError(c, err, views.AdminTeamsVM{})
	}
	h.audit(c, "team.member_added", team, map[string]any{"user": name})
	return c.Redirect(http.StatusSeeOther, "/admin/teams?done=member")
}

// adminTeamMemberRemove takes a person off a team.
func (h *Handler) adminTeamMemberRemove(c echo.Context) error {
	team, name := c.Param("team"), c.FormValue("user")
	if err := h.store.RemoveTeamMember(c.Request().Context(), team, name); err != nil {
		return h.teamError(c, err, views.AdminTeamsVM{})
	}
	h.audit(c, "team.member_removed", team, map[string]any{"user": name})
	return c.Redirect(http.StatusSeeOther, "/admin/teams?done=member_removed")
}

// adminTeamDelete removes a team. Its waiting calls stay assigned to its
// name, in nobody's inbox, until an admin reassigns them.
func (h *Handler) adminTeamDelete(c echo.Context) error {
	team := c.Param("team")
	if err := h.store.DeleteTeam(c.Request().Context(), team); err != nil {
		return h.teamError(c, err, views.AdminTeamsVM{})
	}
	h.audit(c, "team.removed", team, nil)
	return c.Redirect(http.StatusSeeOther, "/admin/teams?done=team_removed")
}

// adminUserEmail sets a person's e-mail address.
func (h *Handler) adminUserEmail(c echo.Context) error {
	name := c.Param("name")
	err := h.store.SetEmail(c.Request().Context(), name, c.FormValue("email"))
	var se *store.Error
	if errors.Is(err, store.ErrInvalid) && errors.As(err, &se) {
		return h.renderUsers(c, http.StatusUnprocessableEntity, views.AdminUsersVM{Error: se.Message})
	}
	if err != nil {
		return err
	}
	h.audit(c, "user.email_set", name, map[string]any{"address": c.FormValue("email") != ""})
	return c.Redirect(http.StatusSeeOther, "/admin/users?done=email")
}

// adminCallReassign gives a waiting call's rounds to someone else; they
// are mailed about the waiting round.
func (h *Handler) adminCallReassign(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.store.Call(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	assignee := strings.TrimSpace(c.FormValue("assignee"))
	from := call.Owner
	if call.Assignee != nil {
		from = *call.Assignee
	}
	entry := h.auditEntry(c, h.person(c), "admin.call.reassigned", call.ID,
		map[string]any{"from": from, "to": assignee, "owner": call.Owner})
	err = h.store.ReassignCall(ctx, call.ID, assignee, entry)
	var se *store.Error
	if errors.As(err, &se) && (errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrConflict)) {
		vm, verr := h.adminCallVM(ctx, call.ID)
		if verr != nil {
			return verr
		}
		vm.ErrorNotice = se.Message
		return render(c, http.StatusUnprocessableEntity, views.AdminCallPage(*vm))
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/admin/calls/"+call.ID+"?done=reassigned")
}
