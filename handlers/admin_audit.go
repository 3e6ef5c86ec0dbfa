package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// requireAdmin lets admins through; anyone else gets the same 404 as for a
// page that does not exist, so the admin area does not show itself.
func (h *Handler) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u := user(c); u == nil || !u.IsAdmin {
			return echo.ErrNotFound
		}
		return next(c)
	}
}

// audit records what the signed-in person did. Callers pass names, ids,
// actions and counts: never answer contents or request state. A failure to
// record is logged; the action itself has happened.
func (h *Handler) audit(c echo.Context, action, target string, detail map[string]any) {
	actor := ""
	if u := user(c); u != nil {
		actor = u.Name
	}
	h.auditAs(c, actor, action, target, detail)
}

// auditAs records an action by actor, for requests made before anyone is
// signed in, such as signing in.
func (h *Handler) auditAs(c echo.Context, actor, action, target string, detail map[string]any) {
	ctx := c.Request().Context()
	err := h.store.Audit(ctx, h.auditEntry(c, actor, action, target, detail))
	if err != nil {
		h.log.ErrorContext(ctx, "writing the audit log", "action", action, "err", err)
	}
}

// userAudit is an entry for an action by the signed-in person, to be
// written in the action's own transaction.
func (h *Handler) userAudit(c echo.Context, action, target string, detail map[string]any) *store.AuditEntry {
	actor := ""
	if u := user(c); u != nil {
		actor = u.Name
	}
	e := h.auditEntry(c, actor, action, target, detail)
	return &e
}

func (h *Handler) auditEntry(c echo.Context, actor, action, target string, detail map[string]any) store.AuditEntry {
	return store.AuditEntry{
		Instance: h.settings.InstanceID, Actor: actor, Action: action, Target: target,
		Addr: c.RealIP(), Detail: detail,
	}
}

// answerAudit is the audit entry for the answer to a round: answered,
// declined or cancelled, as round.Outcome words it. It is written in the
// answer's own transaction.
func (h *Handler) answerAudit(c echo.Context, call *store.Call, seq int, responses json.RawMessage, forWhom string) store.AuditEntry {
	outcome, counts := round.Outcome(responses)
	detail := map[string]any{
		"seq": seq, "server": call.ServerName,
		"accept": counts.Accept, "decline": counts.Decline, "cancel": counts.Cancel,
	}
	if call.Assignee != nil {
		detail["assignee"] = *call.Assignee
	}
	if forWhom != "" {
		detail["for"] = forWhom // the actor answered in their place
	}
	return *h.userAudit(c, "round."+outcome, call.ID, detail)
}

// adminAuditShow lists the audit log, filtered and paged back by id.
func (h *Handler) adminAuditShow(c echo.Context) error {
	f := store.AuditFilter{
		Actor: c.QueryParam("actor"), Action: c.QueryParam("action"), Target: c.QueryParam("target"), Limit: 51,
	}
	f.Before, _ = strconv.ParseInt(c.QueryParam("before"), 10, 64)
	if d, ok := ageParam(c.QueryParam("since")); ok {
		f.Since = time.Now().Add(-d)
	}
	rows, err := h.store.AuditLog(c.Request().Context(), f)
	if err != nil {
		return err
	}
	vm := views.AdminAuditVM{
		Actor: f.Actor, Action: f.Action, Target: f.Target, Since: c.QueryParam("since"),
		Ages: ageOptions(),
	}
	if len(rows) > 50 {
		rows = rows[:50]
		q := c.QueryParams()
		q.Set("before", strconv.FormatInt(rows[len(rows)-1].ID, 10))
		vm.OlderHref = "/admin/audit?" + q.Encode()
	}
	for _, r := range rows {
		vm.Rows = append(vm.Rows, views.AuditRowVM{
			At: r.At, Instance: r.Instance, Actor: r.Actor, Action: r.Action, Target: r.Target,
			Addr: r.Addr, Detail: string(r.Detail), TargetHref: auditTargetHref(r),
		})
	}
	return render(c, http.StatusOK, views.AdminAuditPage(vm))
}

// auditTargetHref links a row to what it was done to, when there is a page.
func auditTargetHref(r store.AuditRecord) string {
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(r.Action, p) {
				return true
			}
		}
		return false
	}
	switch {
	case r.Target == "":
		return ""
	case has("call.", "round.", "admin.call.", "admin.round."):
		return "/admin/calls/" + url.PathEscape(r.Target)
	case has("server.") && r.Action != "server.removed":
		return "/admin/servers/" + url.PathEscape(r.Target)
	}
	return ""
}
