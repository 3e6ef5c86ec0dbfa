package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// connectionRows lists connections for a page; action makes each row's
// form action.
func (h *Handler) connectionRows(ctx context.Context, owner string, action func(store.Connection) string) ([]views.ConnectionRow, error) {
	conns, err := h.store.Connections(ctx, owner)
	if err != nil {
		return nil, err
	}
	rows := make([]views.ConnectionRow, 0, len(conns))
	for _, c := range conns {
		rows = append(rows, views.ConnectionRow{
			Server: c.Server, Owner: c.Owner, Issuer: c.Issuer, Scope: c.Scope, Since: c.CreatedAt,
			Renewed: c.UpdatedAt, ServerHref: "/servers/" + url.PathEscape(c.Server), Action: action(c),
		})
	}
	return rows, nil
}

// adminConnections lists who is connected to which server: GET /admin/connections.
func (h *Handler) adminConnections(c echo.Context) error {
	rows, err := h.connectionRows(c.Request().Context(), "", func(store.Connection) string { return "/admin/connections/revoke" })
	if err != nil {
		return err
	}
	vm := views.AdminConnectionsVM{Rows: rows}
	if c.QueryParam("done") == "revoked" {
		vm.Notice = "Revoked. That connection's next call waits for a new sign-in."
	}
	return render(c, http.StatusOK, views.AdminConnectionsPage(vm))
}

// adminConnectionRevoke ends anyone's connection: POST /admin/connections/revoke.
func (h *Handler) adminConnectionRevoke(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.AdminServer(ctx, c.FormValue("server"))
	if err != nil {
		return err
	}
	owner := c.FormValue("owner")
	if err := h.store.DeleteOAuthToken(ctx, srv.ID, owner); err != nil {
		return err
	}
	h.audit(c, "admin.oauth.revoked", srv.Name, map[string]any{"owner": owner, "for_everyone": owner == ""})
	return c.Redirect(http.StatusSeeOther, "/admin/connections?done=revoked")
}

// adminServerOAuth saves a server's sign-in settings: POST /admin/servers/{name}/oauth.
func (h *Handler) adminServerOAuth(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("server")
	srv, err := h.store.AdminServer(ctx, name)
	if err != nil {
		return err
	}
	clientID, secret := strings.TrimSpace(c.FormValue("client_id")), c.FormValue("client_secret")
	if secret == "" && clientID == srv.OAuthClientID && clientID != "" {
		// Keep the stored secret.
		if old, err := h.store.ServerOAuthClient(&srv.Server); err == nil && old != nil {
			secret = old.ClientSecret
		}
	}
	err = h.store.SetServerOAuth(ctx, name, c.FormValue("mode"), clientID, secret)
	var se *store.Error
	if errors.As(err, &se) && errors.Is(err, store.ErrInvalid) {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, se.Message)
	}
	if err != nil {
		return err
	}
	h.audit(c, "server.oauth", name, map[string]any{"mode": c.FormValue("mode"), "client_id": clientID != ""})
	return c.Redirect(http.StatusSeeOther, "/admin/servers/"+url.PathEscape(name)+"?done=oauth")
}
