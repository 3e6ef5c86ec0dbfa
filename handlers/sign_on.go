package handlers

import (
	"errors"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/sso"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// sessSignOn is the session value of a sign-in under way at the provider.
const sessSignOn = "sso"

// signOnBegin sends the browser to the provider, keeping the sign-in's
// state, nonce and PKCE verifier in this browser's session cookie.
func (h *Handler) signOnBegin(c echo.Context) error {
	if h.auth.SSO == nil {
		return store.ErrNotFound
	}
	ctx := c.Request().Context()
	authURL, pend, err := h.auth.SSO.Begin(ctx, safeNext(c.QueryParam("next")))
	if err != nil {
		h.log.WarnContext(ctx, "single sign-on: the provider cannot be reached", "err", err)
		return echo.NewHTTPError(http.StatusBadGateway, signOnUnreachable)
	}
	s := h.session(c)
	s.Values[sessSignOn] = pend.Encode()
	if err := s.Save(c.Request(), c.Response()); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, authURL)
}

// signOnNotAllowed tells someone the provider knows, but who is outside
// OIDC_ALLOWED_DOMAINS or OIDC_ALLOWED_GROUPS, why nobody was signed in.
func signOnNotAllowed(provider string) string {
	return "Your account at " + provider + " is not allowed here."
}

const (
	signOnUnreachable = "The single sign-on provider cannot be reached just now. " + tryAgain
	signOnRefused     = "This sign-in could not be completed, so nobody was signed in. Start again from the sign-in page."
)

// signOnCallback is where the provider sends the browser back. The sign-in
// under way is forgotten whatever happens, so a callback counts once; one
// this browser did not start signs nobody in.
func (h *Handler) signOnCallback(c echo.Context) error {
	if h.auth.SSO == nil {
		return store.ErrNotFound
	}
	ctx := c.Request().Context()
	s := h.session(c)
	raw, _ := s.Values[sessSignOn].(string)
	delete(s.Values, sessSignOn)
	pend, _ := sso.DecodePending(raw)
	refuse := func(status int, msg string) error {
		if err := s.Save(c.Request(), c.Response()); err != nil {
			return err
		}
		vm := h.loginVM(pend.Next)
		if pend.Next == "" {
			vm.Next = "/"
		}
		vm.Error = msg
		return render(c, status, views.LoginPage(vm))
	}
	id, err := h.auth.SSO.Finish(ctx, pend, c.QueryParams())
	if errors.Is(err, sso.ErrProvider) {
		h.log.WarnContext(ctx, "single sign-on: the provider cannot be reached", "err", err)
		return refuse(http.StatusBadGateway, signOnUnreachable)
	}
	if errors.Is(err, sso.ErrNotAllowed) {
		h.log.InfoContext(ctx, "single sign-on: not allowed here", "subject", id.Subject, "email", id.Email, "addr", c.RealIP())
		h.auditAs(c, "", "sign_in.failed", "", map[string]any{"via": "single sign-on", "reason": err.Error(),
			"subject": id.Subject, "email": id.Email})
		return refuse(http.StatusForbidden, signOnNotAllowed(h.auth.SSO.Provider()))
	}
	if err != nil {
		h.log.InfoContext(ctx, "single sign-on refused", "err", err, "addr", c.RealIP())
		h.auditAs(c, "", "sign_in.failed", "", map[string]any{"via": "single sign-on", "reason": err.Error()})
		return refuse(http.StatusBadRequest, signOnRefused)
	}
	u, err := h.store.SignOnUser(ctx, store.SignOn{Issuer: id.Issuer, Subject: id.Subject, Name: id.Name,
		Email: id.Email, EmailVerified: id.EmailVerified, Groups: id.Teams, Admin: id.Admin, Grant: id.Grant.Encode(), Recheck: h.signOnRecheck()})
	if errors.Is(err, store.ErrAccountDisabled) {
		return refuse(http.StatusForbidden, store.ErrAccountDisabled.Message)
	}
	if err != nil {
		return err
	}
	secret, err := h.startSession(c, u)
	if err != nil {
		return err
	}
	if err := h.store.SetSessionIDToken(ctx, secret, id.IDToken); err != nil {
		return err
	}
	h.log.InfoContext(ctx, "signed in", "user", u.Name, "via", "single sign-on")
	h.auditAs(c, u.Name, "sign_in", u.Name, map[string]any{"via": "single sign-on", "groups": id.Groups})
	return c.Redirect(http.StatusSeeOther, safeNext(pend.Next))
}

// signOnEndURL is where sign-out sends a browser whose session began at
// the provider, to sign out there too; "" for others.
func (h *Handler) signOnEndURL(c echo.Context) string {
	if h.auth.SSO == nil {
		return ""
	}
	secret, ok := h.session(c).Values[sessSecret].(string)
	if !ok {
		return ""
	}
	tok, err := h.store.SessionIDToken(c.Request().Context(), secret)
	if err != nil || tok == "" {
		return ""
	}
	return h.auth.SSO.EndSessionURL(c.Request().Context(), tok)
}

// signsInWith says how a person signs in, for the account page and the
// admin's list: issuer is their provider's, "" for an account not made by
// sign-on.
func (h *Handler) signsInWith(u store.User, issuer string) string {
	switch {
	case issuer != "" && h.auth.SSO != nil && issuer == h.auth.SSO.Issuer() && h.auth.SSO.Name() != sso.DefaultName:
		return "Single sign-on (" + h.auth.SSO.Name() + ")"
	case issuer != "":
		return "Single sign-on (" + issuer + ")"
	case u.PasswordHash != nil && h.auth.PasswordSignInOff:
		return "Password (switched off here)"
	case u.PasswordHash != nil:
		return "Password"
	case h.auth.SSO != nil:
		return "Single sign-on (not signed in yet)"
	case h.auth.TrustedHeader != "":
		return "Trusted proxy (" + h.auth.TrustedHeader + ")"
	}
	return "No way to sign in yet: set a password"
}

// accountTeams lists the teams a person is in, marking those sign-on made
// them join.
func (h *Handler) accountTeams(c echo.Context, u *store.User) ([]views.AccountTeamVM, error) {
	ctx := c.Request().Context()
	all, err := h.store.TeamsOf(ctx, u.Name)
	if err != nil {
		return nil, err
	}
	bySignOn, err := h.store.SignOnTeams(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := make([]views.AccountTeamVM, len(all))
	for i, t := range all {
		out[i] = views.AccountTeamVM{Name: t, BySignOn: slices.Contains(bySignOn, t)}
	}
	return out, nil
}
