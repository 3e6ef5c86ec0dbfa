package handlers

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpauth"
	"github.com/mcp-rounds/rounds/store"
)

// oauthCallback is where the authorization server sends the browser back:
// GET /oauth/callback?code=…&state=…&iss=…. The state finds the flow (once:
// a second use is refused), the issuer is checked (RFC 9207) before
// anything else in the response is acted on, the code is traded for tokens
// with the PKCE verifier, and every call waiting on the connection goes on.
func (h *Handler) oauthCallback(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.QueryParams()
	if q.Get("state") == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "This sign-in does not match one we started (it has no state). Start it again from Rounds.")
	}
	flow, err := h.store.TakeOAuthFlow(ctx, q.Get("state"))
	var se *store.Error
	if errors.As(err, &se) {
		return echo.NewHTTPError(http.StatusBadRequest, se.Message)
	}
	if err != nil {
		return err
	}
	if flow.StartedBy != h.person(c) {
		return echo.NewHTTPError(http.StatusForbidden, "This sign-in was started by someone else, so it was not used for you.")
	}
	if err := mcpauth.CheckIssuer(q, flow.Issuer, flow.IssSupported); err != nil {
		h.audit(c, "oauth.refused", flow.ServerName, map[string]any{"reason": "issuer"})
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	if e := q.Get("error"); e != "" {
		h.audit(c, "oauth.refused", flow.ServerName, map[string]any{"reason": "denied"})
		return echo.NewHTTPError(http.StatusBadRequest, "The authorization server did not grant access ("+e+"). Nothing was connected.")
	}
	if q.Get("code") == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "The authorization server sent no code back. Nothing was connected.")
	}
	reg := mcpauth.Registration{ClientID: flow.Client.ClientID, ClientSecret: flow.Client.ClientSecret, AuthMethod: flow.Client.AuthMethod}
	toks, err := h.engine.Auth().Exchange(ctx, flow.TokenEndpoint, reg, q.Get("code"), flow.Verifier, flow.Resource)
	if err != nil {
		return authFailed(err)
	}
	scope := toks.Scope
	if scope == "" {
		scope = flow.Scope
	}
	resumed, err := h.store.SaveOAuthToken(ctx, store.OAuthToken{
		ServerID: flow.ServerID, Owner: flow.Owner, Issuer: flow.Issuer, TokenEndpoint: flow.TokenEndpoint,
		Client: flow.Client, Resource: flow.Resource, Scope: scope, Access: toks.Access, Refresh: toks.Refresh,
		ExpiresAt: toks.Expires,
	})
	if err != nil {
		return err
	}
	h.audit(c, "oauth.connected", flow.ServerName, map[string]any{"issuer": flow.Issuer, "calls_resumed": resumed,
		"for_everyone": flow.Owner == ""})
	if flow.CallID != nil {
		return c.Redirect(http.StatusSeeOther, "/calls/"+*flow.CallID)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+url.PathEscape(flow.ServerName)+"?connection=connected")
}

// serverDisconnect ends the signed-in person's connection to a server (an
// admin's ends everyone's, on a server connected for all):
// POST /servers/{name}/disconnect.
func (h *Handler) serverDisconnect(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	owner := h.person(c)
	if srv.OAuthMode == store.OAuthShared {
		if !user(c).IsAdmin {
			return echo.NewHTTPError(http.StatusForbidden, "An administrator connected "+srv.Name+" for everyone; only one can disconnect it.")
		}
		owner = ""
	}
	if err := h.store.DeleteOAuthToken(ctx, srv.ID, owner); err != nil {
		return err
	}
	h.audit(c, "oauth.disconnected", srv.Name, map[string]any{"for_everyone": owner == ""})
	return c.Redirect(http.StatusSeeOther, "/servers/"+url.PathEscape(srv.Name)+"?connection=disconnected")
}

// oauthClientMetadata serves Rounds' Client ID Metadata Document, whose URL
// is its client_id at authorization servers that take one:
// GET /oauth/client-metadata.json.
func (h *Handler) oauthClientMetadata(c echo.Context) error {
	return writeJSON(c, http.StatusOK, h.engine.Auth().ClientMetadata())
}
