// Package handlers serves the pages and the JSON API.
package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/authserver"
	"github.com/mcp-rounds/rounds/catalog"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/maillink"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/metrics"
	"github.com/mcp-rounds/rounds/slack"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// Handler holds what every page and API endpoint needs.
type Handler struct {
	store   *store.Store
	engine  *engine.Engine
	catalog *catalog.Service
	log     *slog.Logger
	demo    http.Handler
	scim    http.Handler
	// slack is Rounds in Slack; nil when it is off.
	slack    *slack.Service
	agents   http.Handler
	auth     AuthOptions
	sessions *sessions.CookieStore
	// crossOrigin checks Sec-Fetch-Site / Origin on state-changing requests.
	crossOrigin *http.CrossOriginProtection
	notifier    *store.Notifier
	settings    Settings
	icons       *icons        // the tools' icons fetched, kept an hour
	held        chan struct{} // counts requests held by waitForCall
	draining    chan struct{} // closed at shutdown: held requests answer now
	drain       sync.Once
	writes      lastWrites // the people's last writes here, with a read replica
	authServer  *authserver.Server
}

// Drain answers every held request at once, so shutdown need not wait.
func (h *Handler) Drain() { h.drain.Do(func() { close(h.draining) }) }

// Options are the Handler's collaborators.
type Options struct {
	Store  *store.Store
	Engine *engine.Engine
	// Catalog lists what the servers offer.
	Catalog *catalog.Service
	Logger  *slog.Logger
	// Demo, when set, serves the built-in demo MCP server at /demo/mcp.
	Demo http.Handler
	// SCIM, when set, serves provisioning at /scim/v2 (it checks its own
	// bearer tokens).
	SCIM http.Handler
	// Slack, when set, takes Slack's interactions at /slack/interactions
	// (with a signing secret) and links Slack users at /slack/link.
	Slack *slack.Service
	// Agents, when set, is the agents' MCP front door at /mcp/{server}
	// (package agents); it checks bearer tokens of its own.
	Agents http.Handler
	// AuthServer, when set, is Rounds' OAuth authorization server for
	// agents: its endpoints, the consent page and the connected agents.
	AuthServer *authserver.Server
	Auth       AuthOptions
	// Notifier wakes held requests when a call changes.
	Notifier *store.Notifier
	// Settings are the app's settings the pages and the API need.
	Settings Settings
}

// Settings are what the handlers need of the app's configuration.
type Settings struct {
	// InstanceID names this instance in the audit log and the instances list.
	InstanceID string
	// RoundTTL is the default round lifetime; Retention how long finished
	// calls are kept.
	RoundTTL  time.Duration
	Retention time.Duration
	// Capabilities are what Rounds declares to every server.
	Capabilities mcpclient.Capabilities
	// Mail is on when an SMTP server is set; WebhookAllowPrivate lets
	// webhooks reach private addresses.
	Mail                bool
	WebhookAllowPrivate bool
	// IconAllowPrivate lets a tool's icon come from a server whose name
	// resolves to a loopback, private or link-local address.
	IconAllowPrivate bool
	// Metrics records HTTP requests and serves /metrics; nil for none.
	Metrics *metrics.Metrics
	// MailLinks opens the links that decide from a mail (/decide/…); nil
	// for none. MailDecisions says whether the person mailed must be
	// signed in to decide (maillink.SignIn) or the link alone decides
	// (maillink.ByLink).
	MailLinks     *maillink.Signer
	MailDecisions string
}

// New returns a Handler.
func New(o Options) *Handler {
	return &Handler{
		store: o.Store, engine: o.Engine, catalog: o.Catalog, log: o.Logger, demo: o.Demo, scim: o.SCIM, slack: o.Slack, agents: o.Agents,
		authServer: o.AuthServer,
		auth:       o.Auth, sessions: newCookieStore(o.Auth), crossOrigin: newCrossOriginProtection(o.Auth, o.Logger),
		notifier: o.Notifier, settings: o.Settings, icons: newIcons(o.Settings.IconAllowPrivate), held: make(chan struct{}, maxHeldWaiters), draining: make(chan struct{}),
	}
}

// person is the signed-in person's name.
func (h *Handler) person(c echo.Context) string { return user(c).Name }

type userCtxKey struct{}

// signedIn is the name of the person signed in for the request ctx is
// of, "" when none is: the engine asks servers on their behalf.
func signedIn(ctx context.Context) string {
	if u, _ := ctx.Value(userCtxKey{}).(*store.User); u != nil {
		return u.Name
	}
	return ""
}

// mayAccess reports whether the signed-in person may see what owner
// started: their own, or anything for an admin.
func mayAccess(ctx context.Context, owner string) bool {
	u, _ := ctx.Value(userCtxKey{}).(*store.User)
	return u != nil && (u.Name == owner || u.IsAdmin)
}

// render writes a templ component with the given status.
func render(c echo.Context, status int, comp templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response().Writer)
}

// statusOf maps an error to an HTTP status and a message a person may read.
// What a server did wrong is said in mcpclient.Describe's words.
func statusOf(err error) (int, string) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if msg, ok := he.Message.(string); ok {
			return he.Code, msg
		}
		return he.Code, http.StatusText(he.Code)
	}
	if errors.As(err, new(*mcpclient.AuthRequiredError)) {
		p, _ := mcpclient.Describe(err)
		return http.StatusForbidden, p.Sentence() + " Use Connect on the server's page."
	}
	if p, ok := mcpclient.Describe(err); ok {
		msg := p.Sentence()
		if p.Passing {
			msg += " " + tryAgain
		}
		return http.StatusBadGateway, msg
	}
	var se *store.Error
	msg := ""
	if errors.As(err, &se) {
		msg = se.Message
	}
	switch {
	case store.Unavailable(err):
		return http.StatusServiceUnavailable, "The database is not answering just now. " + tryAgain
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "We couldn't find that."
	case errors.Is(err, store.ErrConflict):
		return http.StatusConflict, msg
	case errors.Is(err, store.ErrForbidden):
		return http.StatusForbidden, msg
	case errors.Is(err, store.ErrInvalid):
		return http.StatusUnprocessableEntity, msg
	case errors.Is(err, context.Canceled):
		return 499, "The request was cancelled."
	}
	return http.StatusInternalServerError, "Something went wrong on our side. Please try again."
}

// formParams reads a posted form, or says it could not be read.
func formParams(c echo.Context) (url.Values, error) {
	values, err := c.FormParams()
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	return values, nil
}

// seqParam reads the round number in the path; one that is not a round's
// is not found.
func seqParam(c echo.Context) (int, error) {
	seq, err := strconv.Atoi(c.Param("seq"))
	if err != nil || seq < 1 {
		return 0, store.ErrNotFound
	}
	return seq, nil
}

// tryAgain ends a message about a trouble that is likely to pass.
const tryAgain = "Please try again in a moment."

// retryAfterSeconds is what a 503 tells clients to wait: about as long as
// a Postgres restart takes.
const retryAfterSeconds = "5"

// ErrorHandler is Echo's error handler: it logs only server errors and
// renders a page, a fragment for htmx, or JSON for the API.
func (h *Handler) ErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := statusOf(err)
	if status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", retryAfterSeconds)
	}
	if status >= 500 {
		h.log.ErrorContext(c.Request().Context(), "request failed", "err", err,
			"method", c.Request().Method, "route", c.Path())
	}
	if isAPI(c) {
		_ = c.JSON(status, apiError{Error: apiMessage{Message: msg}})
		return
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		_ = render(c, status, views.ErrorFragment(msg))
		return
	}
	_ = render(c, status, views.ErrorPage(status, http.StatusText(status), msg))
}

// notFoundErr is the not-found every ownership check answers with, the same
// as for something that does not exist.
func notFoundErr(what string) error {
	return &store.Error{Kind: store.ErrNotFound, Message: what + " not found"}
}
