package handlers

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// Sign-in limits, shared by every instance through Postgres.
const (
	loginWindow        = 15 * time.Minute
	loginMaxPerAccount = 5
	loginMaxPerAddress = 20
	// An address the account signed in from within this time is its
	// owner's usual address, limited on its own.
	loginKnownAddress   = 30 * 24 * time.Hour
	loginFailureMessage = "Too many failed sign-ins. Wait a few minutes and try again."
)

// loginShow renders the sign-in form.
func (h *Handler) loginShow(c echo.Context) error {
	return render(c, http.StatusOK, views.LoginPage(h.loginVM(safeNext(c.QueryParam("next")))))
}

// loginVM is the sign-in page's ways in: the password form unless it is
// off, and the provider's button when single sign-on is set up.
func (h *Handler) loginVM(next string) views.LoginVM {
	vm := views.LoginVM{Next: next, NoPassword: h.auth.PasswordSignInOff}
	if h.auth.SSO != nil {
		vm.SSOName = h.auth.SSO.Name()
		vm.SSOHref = "/auth/oidc?" + url.Values{"next": {next}}.Encode()
	}
	return vm
}

// loginSubmit checks a name and password, rate-limited per account and per
// address, and starts a session.
func (h *Handler) loginSubmit(c echo.Context) error {
	ctx := c.Request().Context()
	if h.auth.PasswordSignInOff {
		vm := h.loginVM(safeNext(c.FormValue("next")))
		vm.Error = passwordOff
		return render(c, http.StatusForbidden, views.LoginPage(vm))
	}
	name := strings.TrimSpace(c.FormValue("username"))
	vm := h.loginVM(safeNext(c.FormValue("next")))
	vm.Username = name
	limits := store.SignInLimits{Window: loginWindow, PerAccount: loginMaxPerAccount, PerAddress: loginMaxPerAddress,
		KnownFor: loginKnownAddress}
	// Counted before the password is checked, so that parallel guesses
	// meet the limit as sequential ones do.
	attempt, err := h.store.BeginSignIn(ctx, name, c.RealIP(), limits)
	if err != nil {
		return err
	}
	if attempt.Limited {
		vm.Error = loginFailureMessage
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(loginWindow/time.Second)))
		return render(c, http.StatusTooManyRequests, views.LoginPage(vm))
	}
	u, err := h.store.Authenticate(ctx, name, c.FormValue("password"))
	if err == store.ErrBadCredentials {
		h.log.InfoContext(ctx, "sign-in failed", "user", name, "addr", c.RealIP())
		h.auditAs(c, name, "sign_in.failed", name, nil)
		vm.Error = err.Error()
		return render(c, http.StatusUnauthorized, views.LoginPage(vm))
	}
	if err != nil {
		return err
	}
	if err := h.store.SignedIn(ctx, attempt, u.ID, loginWindow); err != nil {
		return err
	}
	if _, err := h.startSession(c, u); err != nil {
		return err
	}
	h.log.InfoContext(ctx, "signed in", "user", u.Name)
	h.auditAs(c, u.Name, "sign_in", u.Name, nil)
	return c.Redirect(http.StatusSeeOther, vm.Next)
}

// passwordOff answers a password sign-in when PASSWORD_SIGN_IN is off.
const passwordOff = "Signing in with a password is switched off here. Use single sign-on."

// startSession signs u in on this browser with a new session: nothing
// from before carries over. It returns the session's secret.
func (h *Handler) startSession(c echo.Context, u *store.User) (string, error) {
	ctx := c.Request().Context()
	s := h.session(c)
	if old, ok := s.Values[sessSecret].(string); ok {
		if err := h.store.EndSession(ctx, old); err != nil {
			return "", err
		}
	}
	secret, err := h.store.CreateSession(ctx, u.ID, c.Request().UserAgent(), c.RealIP(), h.auth.SessionTTL)
	if err != nil {
		return "", err
	}
	s.Values = map[any]any{sessSecret: secret, sessIssued: time.Now().Unix(), sessCSRF: randomToken()}
	return secret, s.Save(c.Request(), c.Response())
}

// logout ends the session, on every instance, and a session begun by
// single sign-on at the provider too, where it says how.
func (h *Handler) logout(c echo.Context) error {
	h.audit(c, "sign_out", "", nil)
	end := h.signOnEndURL(c)
	if err := h.forgetCookieSession(c); err != nil {
		return err
	}
	if end != "" {
		// Not a redirect: CSP's form-action keeps a form's answer on this
		// site, so the page itself goes on to the provider.
		return render(c, http.StatusOK, views.SignedOutPage(views.SignedOutVM{Provider: h.auth.SSO.Name(), Href: end}))
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// endCookieSession ends this browser's session and forgets its cookie.
func (h *Handler) endCookieSession(c echo.Context) error {
	if err := h.forgetCookieSession(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

func (h *Handler) forgetCookieSession(c echo.Context) error {
	s := h.session(c)
	if secret, ok := s.Values[sessSecret].(string); ok {
		if err := h.store.EndSession(c.Request().Context(), secret); err != nil {
			return err
		}
	}
	s.Values = map[any]any{}
	s.Options.MaxAge = -1
	return s.Save(c.Request(), c.Response())
}

// safeNext keeps a post-sign-in redirect on this site: only a clean path
// of this site, such as /calls/5?x=1, is kept; anything a browser might
// read as another host (//host, /\host, a tab or newline it drops, a
// scheme) becomes "/".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || len(next) > 2048 {
		return "/"
	}
	for _, r := range next {
		// Browsers drop tabs and newlines from URLs and read a backslash
		// as a slash, so /<TAB>/evil.example would become //evil.example.
		if r < 0x20 || r == 0x7f || r == '\\' || r == utf8.RuneError || unicode.IsSpace(r) {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	return next
}
