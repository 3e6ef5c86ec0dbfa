package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/mcp-rounds/rounds/authserver"
	"github.com/mcp-rounds/rounds/static"
)

// authServerPaths are those authserver answers itself, before sign-in.
var authServerPaths = []string{authserver.PathAuthorize, authserver.PathAuthorizeDone, authserver.PathToken,
	authserver.PathRevoke, authserver.PathRegister, authserver.PathKeys, authserver.PathMetadata,
	authserver.PathOpenIDMetadata, authserver.PathResourceMetadata + ":server"}

// maxBody caps request bodies; answers and arguments are small.
const maxBody = "2M"

// Routes builds the Echo instance with every route of the app.
func (h *Handler) Routes() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = h.ErrorHandler
	e.IPExtractor = h.ipExtractor()
	// /metrics is served before sign-in (scrapers have no session) and
	// before routing; observe wraps everything else.
	e.Pre(h.metricsEndpoint)
	e.Use(h.observe)
	e.Use(securityHeaders)
	e.Use(middleware.Recover())
	// Pages, fragments, JSON and static files go out gzipped to browsers that
	// accept it; the demo's MCP endpoint streams events and is left alone.
	e.Use(compress)
	e.Use(middleware.BodyLimit(maxBody))
	e.Use(refuseUnstorable)
	e.Use(h.authenticate)
	e.Use(h.readYourWrites)

	e.GET("/healthz", h.healthz)
	e.GET("/readyz", h.readyz)
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", static.Handler())))
	e.GET("/favicon.ico", func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, static.Path("favicon.svg"))
	})
	if h.demo != nil {
		e.Any("/demo/mcp", echo.WrapHandler(h.demo))
	}
	if h.agents != nil {
		e.Any("/mcp/:server", h.mcp)
	}
	if h.scim != nil {
		e.Any("/scim/v2/*", echo.WrapHandler(h.scim))
	}
	if h.slack != nil {
		if h.slack.TakesHTTP() {
			e.POST(slackInteractions, echo.WrapHandler(h.slack))
		}
		e.GET("/slack/link", h.slackLinkShow)
		e.POST("/slack/link", h.slackLink)
	}

	e.GET("/login", h.loginShow)
	e.POST("/login", h.loginSubmit)
	e.POST("/logout", h.logout)
	e.GET("/auth/oidc", h.signOnBegin)
	e.GET("/auth/oidc/callback", h.signOnCallback)
	e.GET("/account", h.accountShow)
	e.POST("/account/zone", h.accountZone)
	e.POST("/account/away", h.accountAway)
	e.POST("/account/away/end", h.accountAwayEnd)
	e.POST("/account/mail", h.accountMailUpdate)
	e.POST("/account/calls/delete", h.accountCallsDelete)
	e.POST("/account/sessions/:id/end", h.accountSessionEnd)
	e.POST("/account/sessions/end", h.accountSessionsEnd)
	e.GET("/tokens", h.tokensShow)
	e.POST("/tokens", h.tokenCreate)
	e.POST("/tokens/:id/revoke", h.tokenRevoke)
	e.POST("/tokens/webhook-secret", h.webhookSecretRotate)

	e.GET("/", h.homeShow)
	e.GET("/inbox", h.inboxShow)
	e.GET("/inbox/count", h.inboxCount)
	e.GET("/servers/:server", h.serverShow)
	e.POST("/servers/:server/prompts/:prompt", h.promptGet)
	e.POST("/servers/:server/resources", h.resourceRead)
	e.GET("/servers/:server/tools/:tool", h.toolShow)
	e.GET("/servers/:server/connect", h.oauthConnect)
	e.POST("/servers/:server/disconnect", h.serverDisconnect)
	e.GET("/oauth/callback", h.oauthCallback)
	e.GET("/oauth/client-metadata.json", h.oauthClientMetadata)
	if h.authServer != nil {
		// Rounds as agents' authorization server (package authserver); the
		// two routes above are Rounds as a client of servers' own.
		as := echo.WrapHandler(h.authServer)
		for _, p := range authServerPaths {
			e.Any(p, as)
		}
		e.GET(authserver.PathConsent, h.agentConsentShow)
		e.POST(authserver.PathConsent, h.agentConsentAnswer)
		e.POST("/account/agents/:id/disconnect", h.agentDisconnect)
	}
	e.POST("/servers/:server/tools/:tool", h.callCreate)
	e.GET("/calls", h.callList)
	e.GET("/calls/:id", h.callShow)
	e.GET("/calls/:id/live", h.callLive)
	e.GET("/calls/:id/watch", h.callWatch)
	e.GET("/calls/:id/contents/:i", h.callContent)
	e.POST("/calls/:id/rounds/:seq", h.roundAnswer)
	e.POST("/calls/:id/rounds/:seq/assign", h.roundAssign)
	e.POST("/calls/:id/rounds/:seq/draft", h.roundDraft)
	e.POST("/calls/:id/approval", h.callApproval)
	e.POST("/calls/:id/approval/assign", h.callApprovalAssign)
	e.POST("/calls/:id/retry", h.callRetry)
	e.POST("/calls/:id/stop", h.callStop)
	e.GET("/servers/:server/tools/:tool/icon", h.toolIcon)
	e.POST("/calls/:id/delete", h.callDelete)
	e.POST("/calls/:id/again", h.callAgain)
	// A mail's link: the GET shows what it will answer, only the POST
	// answers (see decideShow).
	e.GET("/decide/:token", h.decideShow)
	e.POST("/decide/:token", h.decideAnswer)

	api := e.Group("/api/v1")
	api.POST("/calls", h.apiCallCreate)
	api.GET("/calls/:id", h.apiCallShow)
	api.POST("/calls/:id/rounds/:seq", h.apiRoundAnswer)
	api.POST("/calls/:id/approval", h.apiCallApproval)
	api.POST("/calls/:id/approval/assign", h.apiApprovalAssign)
	api.POST("/calls/:id/retry", h.apiCallRetry)
	api.GET("/me", h.apiMe)
	api.PUT("/me/away", h.apiAwaySet)
	api.DELETE("/me/away", h.apiAwayClear)
	api.POST("/calls/:id/rounds/:seq/assign", h.apiRoundAssign)
	api.DELETE("/calls/:id", h.apiCallDelete)
	api.POST("/calls/:id/cancel", h.apiCallCancel)
	api.GET("/calls", h.apiCalls)
	api.GET("/servers", h.apiServers)
	api.GET("/servers/:server", h.apiServerShow)
	api.GET("/servers/:server/tools", h.apiServerTools)
	api.GET("/openapi.json", h.apiOpenAPI)

	// Admins only; anyone else gets the 404 of a missing page.
	admin := e.Group("/admin", h.requireAdmin)
	admin.GET("", h.adminDashboard)
	admin.GET("/servers", h.adminServers)
	admin.POST("/servers", h.adminServerCreate)
	admin.GET("/servers/:server", h.adminServerShow)
	admin.POST("/servers/:server", h.adminServerUpdate)
	admin.POST("/servers/:server/check", h.adminServerCheck)
	admin.POST("/servers/:server/refresh", h.adminServerRefresh)
	admin.POST("/servers/:server/learnt/forget", h.adminServerForget)
	admin.POST("/servers/:server/enabled", h.adminServerEnable)
	admin.POST("/servers/:server/delete", h.adminServerDelete)
	admin.GET("/users", h.adminUsers)
	admin.POST("/users", h.adminUserCreate)
	admin.POST("/users/:name/disabled", h.adminUserDisable)
	admin.POST("/users/:name/admin", h.adminUserAdmin)
	admin.POST("/users/:name/password", h.adminUserPassword)
	admin.POST("/users/:name/email", h.adminUserEmail)
	admin.GET("/teams", h.adminTeams)
	admin.POST("/teams", h.adminTeamCreate)
	admin.POST("/teams/:team/members", h.adminTeamMemberAdd)
	admin.POST("/teams/:team/members/remove", h.adminTeamMemberRemove)
	admin.POST("/teams/:team/delete", h.adminTeamDelete)
	admin.POST("/teams/:team/slack", h.adminTeamSlack)
	admin.GET("/provisioning", h.adminProvisioning)
	admin.POST("/provisioning/revoke", h.adminProvisionTokenRevoke)
	admin.POST("/calls/:id/assignee", h.adminCallReassign)
	admin.POST("/users/:name/calls/delete", h.adminUserCallsDelete)
	admin.GET("/calls", h.adminCalls)
	admin.POST("/calls/end", h.adminCallsEnd)
	admin.GET("/calls/:id", h.adminCallShow)
	admin.POST("/calls/:id/retry", h.adminCallRetry)
	admin.POST("/calls/:id/rounds/:seq/expire", h.adminRoundExpire)
	admin.POST("/calls/:id/rounds/:seq/cancel", h.adminRoundCancel)
	admin.GET("/audit", h.adminAuditShow)
	admin.GET("/instances", h.adminInstances)
	admin.GET("/connections", h.adminConnections)
	admin.POST("/connections/revoke", h.adminConnectionRevoke)
	admin.POST("/servers/:server/oauth", h.adminServerOAuth)
	admin.POST("/servers/:server/deadlines", h.adminServerDeadlines)
	admin.POST("/servers/:server/approvals", h.adminServerApprovals)

	// These addresses a form posts to also answer GET, with the page the
	// form belongs to: the address bar after a failed check, a bookmark or a
	// reload meets that page, not "Method Not Allowed". Not every form
	// address does: those of the account's mail, sessions and calls, the
	// webhook secret, a server's disconnect, OAuth and forgetting, a call's
	// delete and again, the teams, an admin's reassigning, ending rounds and
	// calls, a person's e-mail and calls, revoking connections and
	// disconnecting an agent answer only POST.
	e.GET("/logout", redirectTo("/"))
	e.GET("/account/zone", redirectTo("/account"))
	e.GET("/account/away", redirectTo("/account"))
	e.GET("/account/away/end", redirectTo("/account"))
	e.GET("/calls/:id/rounds/:seq/assign", redirectTo("/calls/:id"))
	e.GET("/tokens/:id/revoke", redirectTo("/tokens"))
	e.GET("/servers/:server/prompts/:prompt", redirectTo("/servers/:server"))
	e.GET("/servers/:server/resources", redirectTo("/servers/:server"))
	e.GET("/calls/:id/rounds/:seq", redirectTo("/calls/:id"))
	e.GET("/calls/:id/rounds/:seq/draft", redirectTo("/calls/:id"))
	e.GET("/calls/:id/retry", redirectTo("/calls/:id"))
	e.GET("/calls/:id/stop", redirectTo("/calls/:id"))
	for _, p := range []string{"/check", "/refresh", "/enabled", "/delete", "/deadlines"} {
		admin.GET("/servers/:server"+p, redirectTo("/admin/servers/:server"))
	}
	for _, p := range []string{"/disabled", "/admin", "/password"} {
		admin.GET("/users/:name"+p, redirectTo("/admin/users"))
	}
	admin.GET("/calls/:id/retry", redirectTo("/admin/calls/:id"))
	return e
}

// redirectTo answers a GET with a redirect to the page pattern names, its
// :params filled in from the request's (escaped again).
func redirectTo(pattern string) echo.HandlerFunc {
	return func(c echo.Context) error {
		parts := strings.Split(pattern, "/")
		for i, p := range parts {
			if name, ok := strings.CutPrefix(p, ":"); ok {
				v, err := url.PathUnescape(c.Param(name))
				if err != nil {
					v = c.Param(name)
				}
				parts[i] = url.PathEscape(v)
			}
		}
		return c.Redirect(http.StatusSeeOther, strings.Join(parts, "/"))
	}
}

// ipExtractor trusts X-Forwarded-For only from the configured proxies, so
// the per-address sign-in limit cannot be dodged with a made-up header.
func (h *Handler) ipExtractor() echo.IPExtractor {
	if len(h.auth.TrustedProxies) == 0 {
		return echo.ExtractIPDirect()
	}
	var opts []echo.TrustOption
	for _, p := range h.auth.TrustedProxies {
		opts = append(opts, echo.TrustIPRange(prefixNet(p)))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
