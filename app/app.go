// Package app is one Rounds instance: it reads the configuration, opens and
// migrates the database, starts the round engine and serves the pages and
// the API; it also runs the operator's commands (web user add, …).
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-rounds/rounds/agents"
	"github.com/mcp-rounds/rounds/apiv1"
	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/authserver"
	"github.com/mcp-rounds/rounds/catalog"
	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/handlers"
	"github.com/mcp-rounds/rounds/mcpauth"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/metrics"
	"github.com/mcp-rounds/rounds/provision"
	"github.com/mcp-rounds/rounds/sso"
	"github.com/mcp-rounds/rounds/store"
)

// App is one running instance.
type App struct {
	addr     string
	dbs      pools
	engine   *engine.Engine
	http     *http.Server
	serveErr chan error
	stop     context.CancelFunc // stops background work
	handler  *handlers.Handler
	agents   *agents.Door
	oauth    *authserver.Server
	log      *slog.Logger
}

// Start opens the database, migrates it, registers the configured servers,
// and starts the job engine and the HTTP server.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	began := time.Now()
	// However the instance was started, the local servers it runs cannot
	// read its memory or its environment.
	if err := Protect(); err != nil {
		return nil, err
	}
	log = slog.New(handlers.LogContext(log.Handler())) // request and call ids on every line
	db, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	a, err := start(ctx, cfg, db, log)
	if err != nil {
		db.pools.Close()
		return nil, err
	}
	log.Info("started", "duration", time.Since(began).Round(time.Millisecond))
	return a, nil
}

// database is an instance's Postgres: its pools, the connection that
// listens, the replica the lists may read, and the store over them.
type database struct {
	pools    pools
	notifier *store.Notifier
	replica  *store.Replica
	store    *store.Store
}

// openDatabase opens the pools, migrates the schema, and builds the store.
func openDatabase(ctx context.Context, cfg Config, log *slog.Logger) (*database, error) {
	// River's workers, held requests' reads and the pages share main.
	dbs, err := openPools(ctx, cfg, 25)
	if err != nil {
		return nil, err
	}
	// The migrations' advisory lock is a session's: through a pooler in
	// transaction mode it would stay with whichever server connection took it.
	if err := store.Migrate(ctx, dbs.direct, log); err != nil {
		dbs.Close()
		return nil, err
	}
	db := &database{pools: dbs}
	// One connection of this instance listens: to its own commits, to
	// changes of sign-ins and to River's channels (engine/listener.go).
	// It is a session of its own, so it goes to Postgres itself.
	db.notifier = store.NewNotifier(dbs.direct, log, engine.RiverTopics()...)
	if dbs.read != nil {
		db.replica = store.NewReplica(dbs.read, cfg.ReadMaxLag, log)
	}
	db.store, err = store.New(dbs.main, store.Options{Notifier: db.notifier, Replica: db.replica,
		Reach: store.ReachOptions{Mail: cfg.Mail != nil, CallJSON: apiv1.CallJSON}})
	if err != nil {
		dbs.Close()
		return nil, err
	}
	return db, nil
}

// start puts an instance together over its open database and starts it.
func start(ctx context.Context, cfg Config, db *database, log *slog.Logger) (*App, error) {
	keys, err := secrets(ctx, db.store, cfg)
	if err != nil {
		return nil, err
	}
	if err := firstAdmin(ctx, db.store, cfg.AdminPassword); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	servers := cfg.Servers
	if !cfg.serversSet {
		// The built-in demo has tools that ask for sampling and roots.
		servers = []ServerConfig{{Name: "demo", URL: "http://" + loopback(addr) + "/demo/mcp", Protocol: mcpclient.ProtocolAuto,
			Sampling: true, Roots: true}}
	}
	publicURL := cfg.PublicURL
	if publicURL == "" {
		publicURL = "http://" + addr
	}
	a, err := assemble(ctx, cfg, db, keys, servers, addr, publicURL, log)
	if err != nil {
		ln.Close()
		return nil, err
	}
	if err := a.serve(ctx, ln, db, cfg.PprofAddr); err != nil {
		return nil, err
	}
	return a, nil
}

// assemble registers the servers and builds the engine and the handler.
func assemble(ctx context.Context, cfg Config, db *database, keys keys, servers []ServerConfig,
	addr, publicURL string, log *slog.Logger) (*App, error) {
	if err := registerServers(ctx, db.store, cfg, servers, log); err != nil {
		return nil, err
	}
	// Our own demo server wants its key, like any server with credentials:
	// registered by default, or named in MCP_SERVERS at this app's own
	// /demo/mcp under any name.
	for _, s := range servers {
		if !ownDemo(s.URL, addr, cfg.ListenAddr) {
			continue
		}
		if err := db.store.SetServerHeader(ctx, s.Name, "Authorization", "Bearer "+keys.demo); err != nil {
			return nil, err
		}
	}
	locals := localServers(servers)
	mc := mcpclient.New(mcpclient.Options{Name: "rounds", Version: cfg.Version, RequestTimeout: cfg.RequestTimeout, Locals: locals})
	eng, err := engine.New(db.pools.main, db.store, mc, engineConfig(cfg, db, locals, publicURL, log), log)
	if err != nil {
		return nil, err
	}
	scim, err := provision.Handler(db.store, eng.Config().InstanceID, log)
	if err != nil {
		return nil, err
	}
	as, err := newAuthServer(ctx, cfg, db.store, publicURL, eng.Config().InstanceID, log)
	if err != nil {
		return nil, err
	}
	cat := catalog.New(catalog.Options{Store: db.store, MCP: mc, Capabilities: eng.Config().Capabilities,
		Token: eng.AccessToken, Refused: eng.TurnedDown, Log: log})
	door := agents.New(agents.Options{Store: db.store, Engine: eng, Catalog: cat, Notifier: db.notifier, Log: log,
		PublicURL: publicURL, InstanceID: eng.Config().InstanceID, StateKey: keys.agentState, Wait: cfg.AgentWait,
		VerifyOAuth: verifyOAuth(as)})
	h := handlers.New(handlers.Options{
		SCIM: scim, Agents: door, AuthServer: as,
		Store: db.store, Engine: eng, Catalog: cat, Logger: log, Notifier: db.notifier, Settings: settings(eng.Config(), cfg.IconAllowPrivate),
		Demo: requireBearer(keys.demo, demo.Handler(demo.Options{Secret: keys.demoState})),
		Auth: handlers.AuthOptions{
			SessionKeys:    keys.session,
			SessionTTL:     cfg.SessionTTL,
			SecureCookies:  cfg.SecureCookies,
			TrustedHeader:  cfg.TrustedHeader,
			TrustedProxies: cfg.TrustedProxies,
			PublicOrigin:   cfg.PublicOrigin,
			SSO:            signOn(cfg.SSO, publicURL),
			SignOnRecheck:  cfg.SSO.Recheck,

			PasswordSignInOff: cfg.PasswordSignInOff,
		},
	})
	srv := &http.Server{
		Handler:           h.Routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	return &App{addr: addr, dbs: db.pools, engine: eng, http: srv, serveErr: make(chan error, 1), handler: h, agents: door,
		oauth: as, log: log}, nil
}

// serve starts the background work, serves on ln and starts the engine.
func (a *App) serve(ctx context.Context, ln net.Listener, db *database, pprofAddr string) error {
	background, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	a.stop = stopBackground
	go db.notifier.Run(background)
	if db.replica != nil {
		go db.replica.Run(background)
	}
	go func() {
		if err := a.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.serveErr <- err
		}
	}()
	if err := a.engine.Start(context.WithoutCancel(ctx)); err != nil {
		_ = a.http.Close()
		stopBackground()
		return err
	}
	if pprofAddr != "" {
		// Profiling, on an address of its own that is never public.
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		go http.ListenAndServe(pprofAddr, mux) //nolint:errcheck
	}
	return nil
}

// registerServers registers the configured servers, with their settings,
// credentials and roots, as this start says they are.
func registerServers(ctx context.Context, st *store.Store, cfg Config, servers []ServerConfig, log *slog.Logger) error {
	for _, s := range servers {
		if _, err := st.UpsertServer(ctx, s.Name, s.URL); err != nil {
			return fmt.Errorf("registering server %s: %w", s.Name, err)
		}
		if err := st.SetServerProtocol(ctx, s.Name, s.Protocol); err != nil {
			return err
		}
		if err := st.SetServerFeatures(ctx, s.Name, s.Sampling, s.Roots); err != nil {
			return err
		}
		if s.MaxTasks > 0 {
			// From MCP_SERVERS_FILE: replaces what the admin page set.
			if err := st.SetServerMaxTasks(ctx, s.Name, s.MaxTasks); err != nil {
				return err
			}
		}
		if s.AgentQuestions != "" {
			// From MCP_SERVERS_FILE: replaces what the admin page set. A
			// person or team that does not exist stops the start, as the
			// file's other mistakes do.
			if err := st.SetServerAgentQuestions(ctx, s.Name, s.AgentQuestions); err != nil {
				return fmt.Errorf("MCP_SERVERS_FILE %s, server %q: agentQuestions: %w", cfg.serversFile, s.Name, err)
			}
		}
		if s.HeaderName != "" {
			// From MCP_SERVERS_FILE: kept as stored credentials are, and
			// sent only to the server's own origin.
			if err := st.SetServerHeader(ctx, s.Name, s.HeaderName, s.HeaderValue); err != nil {
				return err
			}
		}
		if _, named := cfg.Roots[s.Name]; !named && s.Roots && cfg.serversSet {
			log.Warn("roots are on for a server MCP_ROOTS gives no roots for; it is told the roots set on the admin page, or none", "server", s.Name)
		}
	}
	if err := registerApprovals(ctx, st, servers, log); err != nil {
		return err
	}
	// Roots set here replace those set on the admin page; a server
	// MCP_ROOTS does not name keeps its own.
	for name, roots := range cfg.Roots {
		if err := st.SetServerRoots(ctx, name, roots); err != nil {
			return err
		}
	}
	return nil
}

// registerApprovals sets the approval rules the servers file gives. A
// server the file gave rules before and gives none now keeps them,
// editable on its admin page again.
func registerApprovals(ctx context.Context, st *store.Store, servers []ServerConfig, log *slog.Logger) error {
	rules := map[string]*approvals.Policy{}
	for _, s := range servers {
		if s.Approvals == nil {
			continue
		}
		rules[s.Name] = s.Approvals
		// People and teams may be provisioned after the start: said, not
		// refused.
		missing, err := st.Unanswerable(ctx, s.Approvals)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			log.Warn("the servers file's approval rules ask people or teams that do not exist (yet); a call only they could approve ends declined",
				"server", s.Name, "missing", strings.Join(missing, ", "))
		}
	}
	released, err := st.SetFileApprovals(ctx, rules)
	if err != nil {
		return fmt.Errorf("setting the servers file's approval rules: %w", err)
	}
	for _, name := range released {
		log.Warn("the servers file no longer gives this server approval rules; it keeps its last ones, now editable on its admin page", "server", name)
	}
	return nil
}

// localServers are the servers that run as local programs.
func localServers(servers []ServerConfig) *mcpclient.Locals {
	locals := mcpclient.NewLocals()
	for _, s := range servers {
		if s.Command != nil {
			// A server pinned to a handshake-era revision has a process
			// per call only; any other shares one long-lived process too.
			shared := s.Protocol == mcpclient.ProtocolAuto || s.Protocol >= mcpclient.ProtocolStateless
			locals.Add(s.Name, *s.Command, s.MaxProcesses, shared)
		}
	}
	return locals
}

// engineConfig is the engine's part of the configuration.
func engineConfig(cfg Config, db *database, locals *mcpclient.Locals, publicURL string, log *slog.Logger) engine.Config {
	return engine.Config{
		RoundTTL:            cfg.RoundTTL,
		MaxRounds:           cfg.MaxRounds,
		MaxRestarts:         restarts(cfg.StateRestarts),
		RequestTimeout:      cfg.RequestTimeout,
		HeldTimeout:         cfg.HeldTimeout,
		RetryWindow:         retryWindow(cfg.RetryWindow),
		TaskWaitPoll:        cfg.TaskWaitPoll,
		TaskWorkers:         cfg.TaskWorkers,
		TaskMaxLifetime:     cfg.TaskMaxLifetime,
		Notifier:            db.notifier,
		Capabilities:        mcpclient.Capabilities{FormElicitation: true, URLElicitation: true},
		Version:             cfg.Version,
		ExpiryInterval:      cfg.ExpiryInterval,
		Retention:           cfg.Retention,
		AuditRetention:      cfg.AuditRetention,
		RetentionInterval:   cfg.RetentionInterval,
		HeartbeatInterval:   cfg.HeartbeatInterval,
		Metrics:             metrics.New(db.store, cfg.MetricsAllow, log),
		Mail:                cfg.Mail,
		PublicURL:           publicURL,
		WebhookAllowPrivate: cfg.WebhookAllowPrivate,
		Auth:                &mcpauth.Client{HTTP: mcpauth.NewHTTPClient(cfg.RequestTimeout), PublicURL: publicURL},
		Locals:              locals,
		StderrLogLines:      cfg.StderrLogLines,
		StderrLogPeriod:     cfg.StderrLogPeriod,
	}
}

// Addr is the address the instance listens on, as host:port.
func (a *App) Addr() string { return a.addr }

// AuthServer is the instance's OAuth authorization server for agents.
func (a *App) AuthServer() *authserver.Server { return a.oauth }

// InstanceID is the id the instance's heartbeat and jobs go by.
func (a *App) InstanceID() string { return a.engine.Config().InstanceID }

// Wait blocks until ctx is done and then shuts the instance down, giving
// running requests and jobs 15 seconds; it returns at once if the HTTP
// server fails.
func (a *App) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case err := <-a.serveErr:
		return err
	}
	a.log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return a.Shutdown(shutdownCtx)
}

// Shutdown stops taking requests, lets running jobs finish, and closes the pool.
func (a *App) Shutdown(ctx context.Context) error {
	a.handler.Drain()
	// Agents' held requests answer now; their calls go on in Rounds.
	a.agents.Close(ctx)
	errHTTP := a.http.Shutdown(ctx)
	errJobs := a.engine.Stop(ctx)
	a.stop()
	a.dbs.Close()
	return errors.Join(errHTTP, errJobs)
}

// loopback turns a listen address into one this process can call itself on.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + port
}

// retryWindow maps RETRY_WINDOW to the engine's: zero there means never.
func retryWindow(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// ownDemo reports whether a server URL is this app's built-in demo, at
// /demo/mcp on the address it listens on.
func ownDemo(raw, addr, listen string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Path != "/demo/mcp" {
		return false
	}
	return u.Host == addr || u.Host == loopback(addr) || u.Host == listen
}

// restarts is the engine's MaxRestarts for STATE_RESTARTS: its zero means
// never, which the engine says with a negative number.
func restarts(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// settings are what the handlers need of the engine's configuration, its
// defaults applied.
func settings(c engine.Config, iconAllowPrivate bool) handlers.Settings {
	return handlers.Settings{InstanceID: c.InstanceID, RoundTTL: c.RoundTTL, Retention: c.Retention,
		Capabilities: c.Capabilities, Mail: c.Mail != nil, WebhookAllowPrivate: c.WebhookAllowPrivate,
		IconAllowPrivate: iconAllowPrivate, Metrics: c.Metrics}
}

// signOn is the single sign-on client of OIDC_*, or nil when it is off.
func signOn(c SSOConfig, publicURL string) *sso.Client {
	if c.Issuer == "" {
		return nil
	}
	return sso.New(sso.Config{Issuer: c.Issuer, ClientID: c.ClientID, ClientSecret: c.ClientSecret, Name: c.Name,
		RedirectURL: publicURL + "/auth/oidc/callback", PostLogoutURL: publicURL + "/login",
		GroupsClaim: c.GroupsClaim, AdminGroups: c.AdminGroups, AllowedDomains: c.AllowedDomains,
		AllowedGroups: c.AllowedGroups, TeamGroups: c.TeamGroups, Timeout: c.Timeout})
}

// verifyOAuth is the front door's check of an OAuth access token, by
// Rounds' own authorization server.
func verifyOAuth(as *authserver.Server) func(ctx context.Context, token string) (*agents.OAuthGrant, error) {
	return func(ctx context.Context, token string) (*agents.OAuthGrant, error) {
		g, err := as.Verify(ctx, token)
		if err != nil {
			return nil, err
		}
		return &agents.OAuthGrant{User: g.User, ClientID: g.ClientID, ClientName: g.ClientName, Servers: g.Servers}, nil
	}
}
