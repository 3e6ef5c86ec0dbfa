package handlers

import (
	"errors"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// serverNamePattern is what servers.name accepts.
var serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// headerNamePattern is an HTTP header name (an RFC 9110 token).
var headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")

// adminNotices are the messages a redirect after an action may show.
var adminNotices = map[string]string{
	"calls_deleted": "The person's calls were deleted, with their rounds and answers.",
	"added":         "Added. It is usable on every instance now.",
	"saved":         "Saved.",
	"oauth":         "Sign-in settings saved.",
	"enabled":       "Enabled: people can start calls on it again.",
	"disabled":      "Disabled: no new calls start on it; calls already started go on.",
	"removed":       "Removed.",
	"refreshed":     "The tools were listed again.",
	"forgotten":     "Forgotten: those tools' next calls take the server's protocol setting again.",
	"expired":       "The waiting round was expired and the call ended expired; the person's page says so, with your reason, which is in the audit log.",
	"cancelled":     "The call was cancelled; the person's page says so, with your reason, which is in the audit log.",
	"retried":       "The call was queued again with its stored answers.",
	"approvals":     "Approval rules saved: they apply to calls started from now on.",
	// Teams, e-mail addresses and reassigning (see admin_teams.go).
	"team":           "Team added. Calls name it as team:NAME.",
	"team_removed":   "Team removed.",
	"member":         "Member added: they see the team's waiting rounds in their inbox.",
	"member_removed": "Member removed.",
	"email":          "E-mail address saved.",
	"reassigned":     "Reassigned: the round now waits for them, and they are mailed about it.",
}

// adminServers lists every server, enabled or not, with the add form.
func (h *Handler) adminServers(c echo.Context) error {
	vm := views.AdminServersVM{Notice: adminNotices[c.QueryParam("done")]}
	return h.renderServers(c, http.StatusOK, vm)
}

func (h *Handler) renderServers(c echo.Context, status int, vm views.AdminServersVM) error {
	srvs, err := h.store.AdminServers(c.Request().Context())
	if err != nil {
		return err
	}
	for i := range srvs {
		s := &srvs[i]
		vm.Servers = append(vm.Servers, views.AdminServerRowVM{
			Name: s.Name, URL: s.URL, Href: "/admin/servers/" + url.PathEscape(s.Name), Enabled: s.Enabled,
			Header: h.store.MaskedHeader(&s.Server), RoundTTL: h.ttlLabel(s), Calls: s.Calls,
		})
	}
	return render(c, status, views.AdminServersPage(vm))
}

// adminServerCreate registers a server. Servers live in Postgres only, so
// it is callable on every instance at once.
func (h *Handler) adminServerCreate(c echo.Context) error {
	ctx := c.Request().Context()
	name, rawURL := strings.TrimSpace(c.FormValue("name")), strings.TrimSpace(c.FormValue("url"))
	headerName, headerValue := strings.TrimSpace(c.FormValue("header_name")), c.FormValue("header_value")
	vm := views.AdminServersVM{NewName: name, NewURL: rawURL, NewHeaderName: headerName}
	vm.Error = checkServerForm(name, rawURL, headerName, headerValue, false)
	if vm.Error == "" {
		_, err := h.store.CreateServer(ctx, name, rawURL)
		if errors.Is(err, store.ErrConflict) {
			vm.Error = "A server named " + name + " already exists."
		} else if err != nil {
			return err
		}
	}
	if vm.Error != "" {
		return h.renderServers(c, http.StatusUnprocessableEntity, vm)
	}
	if headerValue != "" {
		if err := h.store.SetServerHeader(ctx, name, headerName, headerValue); err != nil {
			return err
		}
	}
	h.audit(c, "server.added", name, map[string]any{"url": rawURL, "credentials": headerValue != ""})
	return c.Redirect(http.StatusSeeOther, "/admin/servers/"+url.PathEscape(name)+"?done=added")
}

// checkServerForm says what is wrong with a server form, or "".
func checkServerForm(name, rawURL, headerName, headerValue string, editing bool) string {
	if !editing && !serverNamePattern.MatchString(name) {
		return "Give the server a name of letters, digits, '.', '_' or '-', starting with a letter or digit."
	}
	if u, err := url.Parse(rawURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "Give the server's http or https URL, such as https://mcp.example.com/mcp."
	}
	if headerValue != "" && !headerNamePattern.MatchString(headerName) {
		return "Give the credentials header a name, such as Authorization."
	}
	if headerValue != "" && strings.ContainsAny(headerValue, "\r\n") {
		return "The header value cannot span lines."
	}
	return ""
}

// ttlLabel words a server's round lifetime.
func (h *Handler) ttlLabel(s *store.AdminServer) string {
	if s.RoundTTL > 0 {
		return shortDuration(s.RoundTTL)
	}
	return "default (" + shortDuration(h.settings.RoundTTL) + ")"
}

// canonicalHeader is the header name as it will be sent.
func canonicalHeader(name string) string { return textproto.CanonicalMIMEHeaderKey(name) }

// shortDuration words a duration as Go parses it, without zero units:
// 24h rather than 24h0m0s; "" for zero.
func shortDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
