package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/mcp-rounds/rounds/mcpauth"
	"github.com/mcp-rounds/rounds/store"
)

// flowTTL is how long a person has to sign in at the authorization server.
const flowTTL = 15 * time.Minute

// oauthConnect starts signing in to a server: GET /servers/{name}/connect
// (?call=ID to go back to a waiting call). It discovers the server's
// authorization server, registers if need be, stores the flow (state, PKCE
// verifier, expected issuer) in Postgres so any instance can finish it,
// and sends the browser to the authorization page.
func (h *Handler) oauthConnect(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	u := user(c)
	owner := u.Name
	if srv.OAuthMode == store.OAuthShared {
		if !u.IsAdmin {
			return echo.NewHTTPError(http.StatusForbidden, "An administrator connects "+srv.Name+" for everyone. Ask one to.")
		}
		owner = ""
	}
	var callID *string
	if id := c.QueryParam("call"); id != "" {
		call, err := h.ownedCall(ctx, id)
		if err != nil {
			return err
		}
		callID = &call.ID
	}
	auth := h.engine.Auth()
	target, err := auth.Discover(ctx, srv.URL, srv.OAuthResourceMetadata)
	if err != nil {
		return authFailed(err)
	}
	reg, err := h.registration(c, srv, target)
	if err != nil {
		return authFailed(err)
	}
	scope := mcpauth.Scope(target, srv.OAuthScope)
	if t, err := h.store.OAuthTokenFor(ctx, srv.ID, u.Name); err == nil && t.Issuer == target.AS.Issuer {
		// A step-up keeps what was granted before.
		scope = union(t.Scope, scope)
	}
	state, verifier := randomToken(), oauth2.GenerateVerifier()
	err = h.store.CreateOAuthFlow(ctx, store.OAuthFlow{
		State: state, Owner: owner, StartedBy: u.Name, ServerID: srv.ID, CallID: callID,
		Issuer: target.AS.Issuer, IssSupported: target.AS.AuthorizationResponseIssParameterSupported,
		TokenEndpoint: target.AS.TokenEndpoint, RedirectURI: auth.RedirectURI(), Resource: target.Resource,
		Client: store.OAuthClient{ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, AuthMethod: reg.AuthMethod},
		Scope:  scope, Verifier: verifier, ExpiresAt: time.Now().Add(flowTTL),
	})
	if err != nil {
		return err
	}
	h.audit(c, "oauth.started", srv.Name, map[string]any{"issuer": target.AS.Issuer, "for_everyone": owner == ""})
	return c.Redirect(http.StatusSeeOther, auth.AuthCodeURL(target, *reg, scope, state, verifier))
}

// registration finds Rounds' client at the authorization server, in the
// spec's order, keeping a dynamic registration for next time.
func (h *Handler) registration(c echo.Context, srv *store.Server, target *mcpauth.Target) (*mcpauth.Registration, error) {
	ctx := c.Request().Context()
	auth := h.engine.Auth()
	var pre, known *mcpauth.Registration
	if p, err := h.store.ServerOAuthClient(srv); err != nil {
		return nil, err
	} else if p != nil {
		pre = &mcpauth.Registration{ClientID: p.ClientID, ClientSecret: p.ClientSecret, AuthMethod: p.AuthMethod}
	}
	if k, err := h.store.OAuthClientFor(ctx, target.AS.Issuer, auth.RedirectURI()); err == nil {
		known = &mcpauth.Registration{ClientID: k.ClientID, ClientSecret: k.ClientSecret, AuthMethod: k.AuthMethod}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	reg, err := auth.Register(ctx, target, pre, known)
	if err != nil {
		return nil, err
	}
	if reg.Dynamic {
		if err := h.store.SaveOAuthClient(ctx, target.AS.Issuer, auth.RedirectURI(), store.OAuthClient{
			ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, AuthMethod: reg.AuthMethod}); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// authFailed says what went wrong in a step of signing in, as a 502: the
// authorization server (or the server's metadata) is at fault.
func authFailed(err error) error {
	var ae *mcpauth.Error
	if errors.As(err, &ae) {
		return echo.NewHTTPError(http.StatusBadGateway, ae.Message)
	}
	return err
}

func union(a, b string) string {
	out := strings.Fields(a)
	for _, s := range strings.Fields(b) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}
