package handlers

import (
	"context"
	"errors"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// authorizationFor says whether person must sign in at srv's authorization
// server before srv answers them, and where to start: "none" until the
// server has asked for a token, then "connected" or "required".
func (h *Handler) authorizationFor(ctx context.Context, srv *store.Server, person string) (apiAuthorization, error) {
	if !srv.OAuthRequired {
		return apiAuthorization{Status: "none"}, nil
	}
	_, err := h.store.OAuthTokenFor(ctx, srv.ID, person)
	switch {
	case err == nil:
		return apiAuthorization{Status: "connected"}, nil
	case errors.Is(err, store.ErrNotFound):
		return apiAuthorization{Status: "required", URL: h.connectURL(srv.Name, "")}, nil
	default:
		return apiAuthorization{}, err
	}
}

// connectURL is the page that starts signing in to a server, for a call
// waiting on it when callID is set.
func (h *Handler) connectURL(server, callID string) string {
	u := h.publicURL() + "/servers/" + url.PathEscape(server) + "/connect"
	if callID != "" {
		u += "?call=" + url.QueryEscape(callID)
	}
	return u
}

func (h *Handler) publicURL() string {
	if a := h.engine.Auth(); a != nil {
		return a.PublicURL
	}
	return ""
}

// isAdmin reports whether the signed-in person is an admin.
func isAdmin(ctx context.Context) bool {
	u, _ := ctx.Value(userCtxKey{}).(*store.User)
	return u != nil && u.IsAdmin
}

// connectionVM is the server page's sign-in section, or nil for a server
// that never asked for one. It reads the server again, since listing it
// for the page may just have found that it asks.
func (h *Handler) connectionVM(c echo.Context, srv *store.Server) (*views.ConnectionVM, error) {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, srv.Name)
	if err != nil {
		return nil, err
	}
	authz, err := h.authorizationFor(ctx, srv, h.person(c))
	if err != nil || authz.Status == "none" {
		return nil, err
	}
	base := "/servers/" + url.PathEscape(srv.Name)
	shared := srv.OAuthMode == store.OAuthShared
	vm := &views.ConnectionVM{
		Connected: authz.Status == "connected", Shared: shared, CanAct: !shared || user(c).IsAdmin,
		ConnectHref: base + "/connect", DisconnectHref: base + "/disconnect",
	}
	switch c.QueryParam("connection") {
	case "connected":
		vm.Notice = "Connected."
	case "disconnected":
		vm.Notice = "Disconnected. Calls to this server wait for a sign-in again."
	}
	return vm, nil
}
