package handlers

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/authserver"
	"github.com/mcp-rounds/rounds/maillink"
	"github.com/mcp-rounds/rounds/sso"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// sessionName is the session cookie's name.
const sessionName = "rounds_session"

// Session values.
const (
	sessSecret = "sid" // the secret of the session's row in Postgres
	sessIssued = "issued"
	sessCSRF   = "csrf"
)

// AuthOptions configures sign-in.
type AuthOptions struct {
	// SessionKeys sign and encrypt the session cookie: the first key pair
	// signs, every pair verifies, so keys can rotate.
	SessionKeys [][]byte
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration
	// SecureCookies marks cookies Secure, for a public URL on https.
	SecureCookies bool
	// TrustedHeader, with TrustedProxies, takes the user from a header set
	// by a single sign-on proxy, accepted only from those addresses.
	TrustedHeader  string
	TrustedProxies []netip.Prefix
	// PublicOrigin is the origin of PUBLIC_URL (scheme://host[:port]): a
	// state-changing request from a page there is same-site even when a
	// proxy changes the Host header.
	PublicOrigin string
	// SSO signs people in through an OpenID Connect provider; nil for none.
	// SignOnRecheck is how often at most a signed-on account in use is
	// checked again there (OIDC_RECHECK).
	SSO           *sso.Client
	SignOnRecheck time.Duration
	// PasswordSignInOff removes the password form and refuses password
	// sign-in (PASSWORD_SIGN_IN=off).
	PasswordSignInOff bool
}

// newCrossOriginProtection refuses state-changing requests that a browser
// says come from another site (Sec-Fetch-Site, else Origin against Host),
// as well as the CSRF token does. Requests without either header, such as
// those of programs, pass; bearer-token API requests are not checked.
func newCrossOriginProtection(o AuthOptions, log *slog.Logger) *http.CrossOriginProtection {
	cop := http.NewCrossOriginProtection()
	if o.PublicOrigin != "" {
		if err := cop.AddTrustedOrigin(o.PublicOrigin); err != nil && log != nil {
			log.Warn("PUBLIC_URL is not trusted as an origin", "err", err)
		}
	}
	return cop
}

func newCookieStore(o AuthOptions) *sessions.CookieStore {
	cs := sessions.NewCookieStore(o.SessionKeys...)
	cs.Options = &sessions.Options{
		Path:     "/",
		MaxAge:   int(o.SessionTTL / time.Second),
		HttpOnly: true,
		Secure:   o.SecureCookies,
		SameSite: http.SameSiteLaxMode,
	}
	cs.MaxAge(cs.Options.MaxAge)
	return cs
}

// user returns the signed-in user; routes behind requireUser always have one.
func user(c echo.Context) *store.User {
	u, _ := c.Get("user").(*store.User)
	return u
}

// setUser records who is asking, for handlers and for ownership checks.
func setUser(c echo.Context, u *store.User) {
	c.Set("user", u)
	ctx := context.WithValue(c.Request().Context(), userCtxKey{}, u)
	c.SetRequest(c.Request().WithContext(ctx))
}

// isPublic lists what is reachable without signing in, besides /login.
// The built-in demo MCP server, SCIM and the agents' front door (/mcp/)
// check bearer tokens of their own; Slack's interactions are signed.
func isPublic(path string) bool {
	return path == "/healthz" || path == "/readyz" || strings.HasPrefix(path, "/static/") || path == "/favicon.ico" ||
		path == "/demo/mcp" || path == slackInteractions || path == "/api/v1/openapi.json" || path == "/oauth/client-metadata.json" ||
		strings.HasPrefix(path, "/scim/v2/") || isMCP(path) || slices.Contains(authServerPaths, path) ||
		strings.HasPrefix(path, authserver.PathResourceMetadata)
}

// session loads the visitor's session, starting a fresh one when the
// cookie is missing, expired, or signed with a key no longer known.
func (h *Handler) session(c echo.Context) *sessions.Session {
	if s, ok := c.Get("session").(*sessions.Session); ok {
		return s
	}
	s, err := h.sessions.Get(c.Request(), sessionName)
	if err != nil {
		s, _ = h.sessions.New(c.Request(), sessionName)
	}
	if issued, ok := s.Values[sessIssued].(int64); ok && time.Since(time.Unix(issued, 0)) > h.auth.SessionTTL {
		s.Values = map[any]any{}
	}
	c.Set("session", s)
	return s
}

// authenticate finds who is asking: an API token, a trusted proxy's header,
// or the session. Anyone else is sent to sign in (pages) or told 401 (API).
func (h *Handler) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		req := c.Request()
		if isPublic(req.URL.Path) {
			return next(c)
		}
		if isAPI(c) {
			if authz := req.Header.Get("Authorization"); authz != "" {
				token, ok := strings.CutPrefix(authz, "Bearer ")
				if !ok {
					return echo.NewHTTPError(http.StatusUnauthorized, "Use Authorization: Bearer TOKEN.")
				}
				u, err := h.store.UserByToken(ctx, strings.TrimSpace(token))
				if err == nil {
					u, err = h.checkSignOn(c, u)
				}
				if errors.Is(err, store.ErrSignOnAgain) {
					return echo.NewHTTPError(http.StatusUnauthorized, store.ErrSignOnAgain.Message)
				}
				if errors.Is(err, store.ErrNotFound) {
					return echo.NewHTTPError(http.StatusUnauthorized, "The API token is not valid, or was revoked.")
				}
				if err != nil {
					return err
				}
				setUser(c, u)
				c.Set("bearer", true)
				return next(c)
			}
		}
		if u, err := h.proxyUser(c); err != nil {
			return err
		} else if u != nil {
			setUser(c, u)
			return h.withCSRF(next)(c)
		}
		if req.URL.Path == "/login" || req.URL.Path == "/auth/oidc" || req.URL.Path == "/auth/oidc/callback" {
			return h.withCSRF(next)(c)
		}
		s := h.session(c)
		if secret, ok := s.Values[sessSecret].(string); ok {
			// One query: the session's row joined to its user. A session
			// ended anywhere, or a disabled user, finds nothing.
			u, sessionID, err := h.store.UserBySession(ctx, secret)
			if err == nil {
				u, err = h.checkSignOn(c, u)
			}
			if err == nil {
				setUser(c, u)
				c.Set("sessionID", sessionID)
				return h.withCSRF(next)(c)
			}
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if isAPI(c) {
			return echo.NewHTTPError(http.StatusUnauthorized, "Sign in, or send Authorization: Bearer TOKEN.")
		}
		if h.settings.MailDecisions == maillink.ByLink && strings.HasPrefix(req.URL.Path, "/decide/") {
			// MAIL_DECISIONS=link: the link alone is the proof; the form
			// still carries the (signed-out) session's CSRF token.
			return h.withCSRF(next)(c)
		}
		if req.Header.Get("HX-Request") == "true" {
			c.Response().Header().Set("HX-Redirect", "/login")
			return echo.NewHTTPError(http.StatusUnauthorized, sessionEnded)
		}
		if req.Method != http.MethodGet {
			return echo.NewHTTPError(http.StatusUnauthorized, sessionEnded)
		}
		return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(req.URL.RequestURI()))
	}
}

// proxyUser returns the user named by a trusted proxy, if this request
// came from one.
func (h *Handler) proxyUser(c echo.Context) (*store.User, error) {
	if h.auth.TrustedHeader == "" || len(h.auth.TrustedProxies) == 0 {
		return nil, nil
	}
	name := strings.TrimSpace(c.Request().Header.Get(h.auth.TrustedHeader))
	if name == "" {
		return nil, nil
	}
	ap, err := netip.ParseAddrPort(c.Request().RemoteAddr)
	if err != nil {
		return nil, nil
	}
	for _, p := range h.auth.TrustedProxies {
		if p.Contains(ap.Addr().Unmap()) {
			u, err := h.store.EnsureUser(c.Request().Context(), name)
			if err != nil {
				return nil, err
			}
			if u.Disabled {
				return nil, echo.NewHTTPError(http.StatusForbidden, "This account is disabled.")
			}
			return u, nil
		}
	}
	return nil, nil
}

// withCSRF gives the session a CSRF token, hands it to the views, and
// refuses state-changing requests that do not carry it.
func (h *Handler) withCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if bearer, _ := c.Get("bearer").(bool); bearer {
			return next(c)
		}
		if err := h.crossOrigin.Check(c.Request()); err != nil {
			return echo.NewHTTPError(http.StatusForbidden,
				"This request came from another site, so it was refused. Open Rounds itself and try again there.")
		}
		s := h.session(c)
		token, _ := s.Values[sessCSRF].(string)
		if token == "" {
			token = randomToken()
			s.Values[sessCSRF] = token
			if _, ok := s.Values[sessIssued]; !ok {
				s.Values[sessIssued] = time.Now().Unix()
			}
			if err := s.Save(c.Request(), c.Response()); err != nil {
				return err
			}
		}
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			sent := c.Request().Header.Get("X-CSRF-Token")
			if sent == "" {
				sent = c.FormValue(views.CSRFFieldName)
			}
			if subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
				return echo.NewHTTPError(http.StatusForbidden, "This form has expired. Go back, reload the page and try again.")
			}
		}
		ctx := views.WithZone(views.WithCSRF(c.Request().Context(), token), zone(c))
		if u := user(c); u != nil {
			ctx = views.WithUser(ctx, views.UserVM{Name: u.Name, IsAdmin: u.IsAdmin, Waiting: h.waiting(c, u.Name)})
		}
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

// sessionEnded tells someone whose sign-in is gone to sign in again.
const sessionEnded = "Your session has ended. Please sign in again."

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// securityHeaders sets the headers every response carries.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; "+
			"img-src 'self' data:; media-src 'self' data:; connect-src 'self'; object-src 'none'; "+
			"base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=(), interest-cohort=()")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		return next(c)
	}
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
