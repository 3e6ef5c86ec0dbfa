package app

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/localproc"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/sso"
	"github.com/mcp-rounds/rounds/store"
)

// Config is an instance's configuration, read once from the environment.
type Config struct {
	DatabaseURL string
	// DatabaseDirectURL names Postgres itself when DatabaseURL names a
	// pooler in transaction mode (PgBouncer): listening, migrations and
	// their lock go through it. Empty: DatabaseURL is Postgres itself.
	DatabaseDirectURL string
	// DatabaseReadURL names a streaming replica the lists read from;
	// ReadMaxLag is how far behind it may be before they read the primary.
	DatabaseReadURL string
	ReadMaxLag      time.Duration
	ListenAddr      string
	// PublicURL is where people reach the app, without a trailing slash;
	// empty means http://LISTEN_ADDR.
	PublicURL string
	// Servers are those MCP_SERVERS names; without it (serversSet false),
	// the built-in demo is registered instead.
	Servers    []ServerConfig
	serversSet bool
	Roots      map[string][]store.Root // roots/list answers by server name, from MCP_ROOTS
	RoundTTL   time.Duration
	MaxRounds  int
	// StateRestarts caps how often a call's server is asked afresh by
	// itself after it forgot the call's questions; zero for never.
	StateRestarts  int
	RequestTimeout time.Duration
	HeldTimeout    time.Duration
	// RetryWindow is how long a request the server could not take is sent
	// again by itself; zero for never.
	RetryWindow time.Duration

	SessionKeys    [][]byte // pairs: hash key, block key
	SessionTTL     time.Duration
	SecureCookies  bool
	PublicOrigin   string // PUBLIC_URL's scheme://host, trusted for state-changing requests
	TrustedHeader  string
	TrustedProxies []netip.Prefix
	CredentialsKey []byte
	AdminPassword  string
	// SSO is single sign-on through an OpenID Connect provider (OIDC_*);
	// its Issuer is empty when it is off. PasswordSignInOff is
	// PASSWORD_SIGN_IN=off.
	SSO               SSOConfig
	PasswordSignInOff bool

	// MetricsAllow may scrape /metrics without a token; ExpiryInterval and
	// HeartbeatInterval pace the expiry job and the instance heartbeat.
	MetricsAllow      []netip.Prefix
	ExpiryInterval    time.Duration
	HeartbeatInterval time.Duration

	// Reaching people: the SMTP server round mail goes through (nil: no
	// mail), and whether webhooks may reach private addresses.
	Mail                *engine.Mail
	WebhookAllowPrivate bool
	// IconAllowPrivate lets tools' icons come from a server whose name
	// resolves to a private address (ICON_ALLOW_PRIVATE).
	IconAllowPrivate bool
	// Retention is how long finished calls are kept, AuditRetention how
	// long audit entries are; RetentionInterval paces the job deleting them.
	Retention         time.Duration
	AuditRetention    time.Duration
	RetentionInterval time.Duration

	// Version is this build's, told to MCP servers: "dev" unless the
	// command was built with one. PprofAddr serves Go's profiler when set.
	Version   string
	PprofAddr string
	// TaskWaitPoll is how often at most a server's task is polled while
	// its question waits for a person.
	TaskWaitPoll time.Duration
	// StderrLogLines of each local server's stderr are logged every
	// StderrLogPeriod at most (LOCAL_STDERR_LOG).
	StderrLogLines  int
	StderrLogPeriod time.Duration
}

// ServerConfig is an MCP server named in MCP_SERVERS.
type ServerConfig struct {
	Name string
	URL  string
	// Protocol is "auto" (prefer 2026-07-28, fall back) or a pinned revision.
	Protocol string
	// Sampling and Roots switch on what the server may ask besides forms.
	Sampling, Roots bool
	// HeaderName and HeaderValue, from MCP_SERVERS_FILE, are sent with
	// every request to the server's own origin.
	HeaderName, HeaderValue string
	// Command runs a local server over stdio (MCP_SERVERS_FILE only), at
	// most MaxProcesses at once for calls that hold a session.
	Command      *mcpclient.Command
	MaxProcesses int
}

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/rounds?sslmode=disable"

// DefaultReadMaxLag is how far the read replica may lag before the lists
// read from the primary instead.
const DefaultReadMaxLag = 10 * time.Second

var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// LoadConfig reads the configuration through getenv (os.Getenv, or a map
// in tests) and says in words what is wrong with a setting.
func LoadConfig(getenv func(string) string) (Config, error) {
	cfg := Config{
		DatabaseURL:       or(getenv("DATABASE_URL"), defaultDatabaseURL),
		DatabaseDirectURL: getenv("DATABASE_DIRECT_URL"),
		DatabaseReadURL:   getenv("DATABASE_READ_URL"),
		ReadMaxLag:        DefaultReadMaxLag,
		ListenAddr:        or(getenv("LISTEN_ADDR"), "127.0.0.1:8080"),
		RoundTTL:          engine.DefaultRoundTTL,
		MaxRounds:         engine.DefaultMaxRounds,
		StateRestarts:     engine.DefaultMaxRestarts,
		RequestTimeout:    engine.DefaultRequestTimeout,
		Version:           "dev",
		PprofAddr:         getenv("PPROF_ADDR"),
	}
	var err error
	if v := getenv("READ_MAX_LAG"); v != "" {
		if cfg.ReadMaxLag, err = time.ParseDuration(v); err != nil || cfg.ReadMaxLag <= 0 {
			return cfg, fmt.Errorf("READ_MAX_LAG: want a positive Go duration such as 10s, got %q", v)
		}
	}
	if v := getenv("ROUND_TTL"); v != "" {
		if cfg.RoundTTL, err = time.ParseDuration(v); err != nil || cfg.RoundTTL <= 0 {
			return cfg, fmt.Errorf("ROUND_TTL: want a positive Go duration such as 30m, got %q", v)
		}
	}
	if v := getenv("MCP_REQUEST_TIMEOUT"); v != "" {
		if cfg.RequestTimeout, err = time.ParseDuration(v); err != nil || cfg.RequestTimeout <= 0 {
			return cfg, fmt.Errorf("MCP_REQUEST_TIMEOUT: want a positive Go duration such as 15s, got %q", v)
		}
	}
	if v := getenv("MAX_ROUNDS"); v != "" {
		if cfg.MaxRounds, err = strconv.Atoi(v); err != nil || cfg.MaxRounds < 1 {
			return cfg, fmt.Errorf("MAX_ROUNDS: want a whole number of at least 1, got %q", v)
		}
	}
	if v := getenv("STATE_RESTARTS"); v != "" {
		if cfg.StateRestarts, err = strconv.Atoi(v); err != nil || cfg.StateRestarts < 0 {
			return cfg, fmt.Errorf("STATE_RESTARTS: want a whole number, 0 or more, got %q", v)
		}
	}
	cfg.HeldTimeout = engine.DefaultHeldTimeout
	if v := getenv("HELD_TIMEOUT"); v != "" {
		if cfg.HeldTimeout, err = time.ParseDuration(v); err != nil || cfg.HeldTimeout <= 0 {
			return cfg, fmt.Errorf("HELD_TIMEOUT: want a positive Go duration such as 10m, got %q", v)
		}
	}
	cfg.RetryWindow = engine.DefaultRetryWindow
	if v := getenv("RETRY_WINDOW"); v != "" {
		if cfg.RetryWindow, err = time.ParseDuration(v); err != nil || cfg.RetryWindow < 0 {
			return cfg, fmt.Errorf("RETRY_WINDOW: want a Go duration such as 10m (0 for never), got %q", v)
		}
	}
	cfg.TaskWaitPoll = engine.DefaultTaskWaitPoll
	if v := getenv("TASK_WAIT_POLL"); v != "" {
		if cfg.TaskWaitPoll, err = time.ParseDuration(v); err != nil || cfg.TaskWaitPoll <= 0 {
			return cfg, fmt.Errorf("TASK_WAIT_POLL: want a positive Go duration such as 30s, got %q", v)
		}
	}
	cfg.SessionTTL = 12 * time.Hour
	if v := getenv("SESSION_TTL"); v != "" {
		if cfg.SessionTTL, err = time.ParseDuration(v); err != nil || cfg.SessionTTL <= 0 {
			return cfg, fmt.Errorf("SESSION_TTL: want a positive Go duration such as 12h, got %q", v)
		}
	}
	for key := range strings.SplitSeq(getenv("SESSION_KEYS"), ",") {
		if key = strings.TrimSpace(key); key == "" {
			continue
		}
		if len(key) < 32 {
			return cfg, errors.New("SESSION_KEYS: each key must be at least 32 characters")
		}
		cfg.SessionKeys = append(cfg.SessionKeys, sessionKeyPair(key)...)
	}
	if v := getenv("PUBLIC_URL"); v != "" {
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			return cfg, fmt.Errorf("PUBLIC_URL: want an absolute URL, got %q", v)
		}
		cfg.SecureCookies = u.Scheme == "https"
		cfg.PublicURL = strings.TrimRight(v, "/")
		cfg.PublicOrigin = u.Scheme + "://" + u.Host
	}
	if cfg.Mail, err = engine.ParseMail(getenv("SMTP_URL"), getenv("MAIL_FROM")); err != nil {
		return cfg, err
	}
	if v := getenv("WEBHOOK_ALLOW_PRIVATE"); v != "" {
		if cfg.WebhookAllowPrivate, err = strconv.ParseBool(v); err != nil {
			return cfg, fmt.Errorf("WEBHOOK_ALLOW_PRIVATE: want true or false, got %q", v)
		}
	}
	if v := getenv("ICON_ALLOW_PRIVATE"); v != "" {
		if cfg.IconAllowPrivate, err = strconv.ParseBool(v); err != nil {
			return cfg, fmt.Errorf("ICON_ALLOW_PRIVATE: want true or false, got %q", v)
		}
	}
	cfg.TrustedHeader = getenv("TRUSTED_PROXY_HEADER")
	for p := range strings.SplitSeq(getenv("TRUSTED_PROXIES"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return cfg, fmt.Errorf("TRUSTED_PROXIES: %q is neither an address nor a CIDR range", p)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, prefix)
	}
	if cfg.TrustedHeader != "" && len(cfg.TrustedProxies) == 0 {
		return cfg, errors.New("TRUSTED_PROXY_HEADER needs TRUSTED_PROXIES: the addresses allowed to set it")
	}
	if v := getenv("CREDENTIALS_KEY"); v != "" {
		if cfg.CredentialsKey, err = base64.StdEncoding.DecodeString(v); err != nil || len(cfg.CredentialsKey) != 32 {
			return cfg, errors.New("CREDENTIALS_KEY: want 32 random bytes in base64 (openssl rand -base64 32)")
		}
	}
	cfg.AdminPassword = getenv("ADMIN_PASSWORD")
	if cfg.SSO, err = parseSSO(getenv); err != nil {
		return cfg, err
	}
	switch v := getenv("PASSWORD_SIGN_IN"); v {
	case "", "on":
	case "off":
		if cfg.SSO.Issuer == "" && cfg.TrustedHeader == "" {
			return cfg, errors.New("PASSWORD_SIGN_IN=off needs another way in: OIDC_ISSUER or TRUSTED_PROXY_HEADER")
		}
		cfg.PasswordSignInOff = true
	default:
		return cfg, fmt.Errorf("PASSWORD_SIGN_IN: want on or off, got %q", v)
	}
	if v, ok := lookup(getenv, "MCP_SERVERS"); ok {
		cfg.serversSet = true
		if cfg.Servers, err = parseServers(v); err != nil {
			return cfg, err
		}
	}
	if path := getenv("MCP_SERVERS_FILE"); path != "" {
		more, err := loadServersFile(path, getenv)
		if err != nil {
			return cfg, err
		}
		for _, s := range more {
			if slices.ContainsFunc(cfg.Servers, func(o ServerConfig) bool { return o.Name == s.Name }) {
				return cfg, fmt.Errorf("MCP_SERVERS_FILE: server %s is named in MCP_SERVERS too", s.Name)
			}
		}
		cfg.serversSet = true
		cfg.Servers = append(cfg.Servers, more...)
	}
	if cfg.StderrLogLines, cfg.StderrLogPeriod, err = parseStderrLog(getenv("LOCAL_STDERR_LOG")); err != nil {
		return cfg, err
	}
	if cfg.Roots, err = parseRoots(getenv("MCP_ROOTS")); err != nil {
		return cfg, err
	}
	if cfg.MetricsAllow, err = parsePrefixes("METRICS_ALLOW", or(getenv("METRICS_ALLOW"), "127.0.0.0/8,::1")); err != nil {
		return cfg, err
	}
	cfg.Retention, cfg.AuditRetention = engine.DefaultRetention, engine.DefaultAuditRetention
	for name, d := range map[string]*time.Duration{"RETENTION": &cfg.Retention, "AUDIT_RETENTION": &cfg.AuditRetention} {
		if v := getenv(name); v != "" {
			if *d, err = parseDays(v); err != nil || *d <= 0 {
				return cfg, fmt.Errorf("%s: want a number of days such as 90d, or a Go duration such as 2160h, got %q", name, v)
			}
		}
	}
	if cfg.AuditRetention < 24*time.Hour {
		return cfg, fmt.Errorf("AUDIT_RETENTION: the audit log is kept at least a day (1d), got %q", getenv("AUDIT_RETENTION"))
	}
	for name, d := range map[string]*time.Duration{"EXPIRY_INTERVAL": &cfg.ExpiryInterval, "HEARTBEAT_INTERVAL": &cfg.HeartbeatInterval,
		"RETENTION_INTERVAL": &cfg.RetentionInterval} {
		if v := getenv(name); v != "" {
			if *d, err = time.ParseDuration(v); err != nil || *d <= 0 {
				return cfg, fmt.Errorf("%s: want a positive Go duration such as 30s, got %q", name, v)
			}
		}
	}
	return cfg, nil
}

// parseDays reads a number of days ("90d") or a Go duration ("2160h").
func parseDays(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, err
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}

// parsePrefixes reads a list of addresses and CIDR ranges: 10.0.0.0/8,::1.
func parsePrefixes(name, v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("%s: %q is neither an address nor a CIDR range", name, p)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		out = append(out, prefix.Masked())
	}
	return out, nil
}

// parseServers reads MCP_SERVERS: name=url,name[sampling,roots,2025-11-25]=url.
// The settings in brackets, in any order, switch on sampling and roots for
// the server and pin its protocol revision; without them, neither is on and
// the protocol is "auto".
func parseServers(v string) ([]ServerConfig, error) {
	var out []ServerConfig
	for _, item := range splitOutsideBrackets(v) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, rawURL, ok := strings.Cut(item, "=")
		sc := ServerConfig{Protocol: mcpclient.ProtocolAuto}
		if base, flags, found := strings.Cut(name, "["); found && strings.HasSuffix(flags, "]") {
			name = base
			for flag := range strings.SplitSeq(strings.TrimSuffix(flags, "]"), ",") {
				flag = strings.TrimPrefix(strings.TrimSpace(flag), "protocol:")
				switch {
				case flag == "sampling":
					sc.Sampling = true
				case flag == "roots":
					sc.Roots = true
				case flag == mcpclient.ProtocolAuto || mcpclient.KnownRevision(flag):
					sc.Protocol = flag
				default:
					return nil, fmt.Errorf("MCP_SERVERS: %q: unknown setting %q (sampling, roots, or a protocol revision such as 2025-11-25, or auto)", item, flag)
				}
			}
		}
		if !ok || !serverName.MatchString(name) {
			return nil, fmt.Errorf("MCP_SERVERS: %q is not name=url with a name of letters, digits, '.', '_' or '-'", item)
		}
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("MCP_SERVERS: %q needs an http or https URL", item)
		}
		sc.Name, sc.URL = name, rawURL
		out = append(out, sc)
	}
	return out, nil
}

// parseRoots reads MCP_ROOTS: the roots each server's roots/list questions
// are answered with, as name=uri|label;uri|label, servers separated by
// commas: demo=file:///srv/data|Data;file:///home/me. The label is optional.
func parseRoots(v string) (map[string][]store.Root, error) {
	out := map[string][]store.Root{}
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, list, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		if !ok || !serverName.MatchString(name) {
			return nil, fmt.Errorf("MCP_ROOTS: %q is not name=file:///path|label;…", item)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("MCP_ROOTS: server %s is named twice", name)
		}
		roots := []store.Root{}
		for entry := range strings.SplitSeq(list, ";") {
			if entry = strings.TrimSpace(entry); entry == "" {
				continue
			}
			uri, label, _ := strings.Cut(entry, "|")
			root, err := store.NewRoot(strings.TrimSpace(uri), strings.TrimSpace(label))
			if err != nil {
				return nil, fmt.Errorf("MCP_ROOTS: %s: %w", name, err)
			}
			roots = append(roots, root)
		}
		out[name] = roots
	}
	return out, nil
}

// splitOutsideBrackets splits a list on commas, except those between
// brackets: "a[x,y]=u,b=v" is two items.
func splitOutsideBrackets(v string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range v {
		switch r {
		case '[':
			depth++
		case ']':
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				out = append(out, v[start:i])
				start = i + 1
			}
		}
	}
	return append(out, v[start:])
}

// sessionKeyPair derives a signing key and an encryption key from one
// configured secret.
func sessionKeyPair(secret string) [][]byte {
	hash := sha256.Sum256([]byte("rounds session signing\x00" + secret))
	block := sha256.Sum256([]byte("rounds session encryption\x00" + secret))
	return [][]byte{hash[:], block[:]}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// lookup tells an unset variable from an empty one; getenv cannot, so an
// empty MCP_SERVERS counts as unset.
func lookup(getenv func(string) string, key string) (string, bool) {
	v := getenv(key)
	return v, v != ""
}

// SSOConfig is single sign-on through an OpenID Connect provider.
type SSOConfig struct {
	Issuer, ClientID, ClientSecret string
	Name                           string // what the sign-in button calls it
	GroupsClaim                    string
	AdminGroups                    []string
	// AllowedDomains and AllowedGroups limit who may sign in; TeamGroups
	// name the groups that map to teams (empty: every group does).
	AllowedDomains, AllowedGroups, TeamGroups []string
	// Recheck is how often at most a signed-on account in use is checked
	// again at the provider; Timeout bounds each request to it.
	Recheck, Timeout time.Duration
}

// parseSSO reads the OIDC_* settings; without OIDC_ISSUER sign-on is off.
func parseSSO(getenv func(string) string) (SSOConfig, error) {
	c := SSOConfig{Issuer: getenv("OIDC_ISSUER"), ClientID: getenv("OIDC_CLIENT_ID"),
		ClientSecret: getenv("OIDC_CLIENT_SECRET"), Name: getenv("OIDC_NAME"), GroupsClaim: getenv("OIDC_GROUPS_CLAIM"),
		AdminGroups: list(getenv("OIDC_ADMIN_GROUPS")), AllowedGroups: list(getenv("OIDC_ALLOWED_GROUPS")),
		TeamGroups: list(getenv("OIDC_TEAM_GROUPS"))}
	for _, d := range list(getenv("OIDC_ALLOWED_DOMAINS")) {
		d = strings.TrimPrefix(d, "@")
		if strings.ContainsAny(d, "@/: ") || !strings.Contains(d, ".") {
			return c, fmt.Errorf("OIDC_ALLOWED_DOMAINS: want e-mail domains such as example.com, got %q", d)
		}
		c.AllowedDomains = append(c.AllowedDomains, d)
	}
	for name, d := range map[string]*time.Duration{"OIDC_RECHECK": &c.Recheck, "OIDC_TIMEOUT": &c.Timeout} {
		v := getenv(name)
		if v == "" {
			continue
		}
		var err error
		if *d, err = time.ParseDuration(v); err != nil || *d <= 0 {
			return c, fmt.Errorf("%s: want a positive Go duration such as 5m, got %q", name, v)
		}
	}
	if c.Issuer == "" {
		if c.ClientID != "" {
			return c, errors.New("OIDC_CLIENT_ID needs OIDC_ISSUER: the provider's issuer URL")
		}
		return c, nil
	}
	if c.Recheck == 0 {
		c.Recheck = sso.DefaultRecheck
	}
	if c.Timeout == 0 {
		c.Timeout = sso.DefaultTimeout
	}
	u, err := url.Parse(c.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return c, fmt.Errorf("OIDC_ISSUER: want the provider's issuer URL, such as https://login.example.com, got %q", c.Issuer)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return c, fmt.Errorf("OIDC_ISSUER: %q is plain http, so the client secret and people's tokens would cross the network "+
			"unencrypted; use https (http is allowed only for a provider on this machine: localhost, 127.0.0.1, ::1)", c.Issuer)
	}
	if c.ClientID == "" {
		return c, errors.New("OIDC_ISSUER needs OIDC_CLIENT_ID: the client id the provider gave Rounds")
	}
	return c, nil
}

// isLoopback says whether a host names this machine.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
}

// list reads a comma-separated list, dropping blanks.
func list(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseStderrLog reads LOCAL_STDERR_LOG: how many lines of a local
// server's stderr are logged in how long, "1000/1m"; localproc's
// defaults when it is empty.
func parseStderrLog(v string) (int, time.Duration, error) {
	if v == "" {
		return localproc.DefaultStderrLogLines, localproc.DefaultStderrLogPeriod, nil
	}
	lines, period, _ := strings.Cut(v, "/")
	n, err := strconv.Atoi(lines)
	d, errd := time.ParseDuration(period)
	if err != nil || errd != nil || n < 1 || d <= 0 {
		return 0, 0, fmt.Errorf("LOCAL_STDERR_LOG: want lines per Go duration, such as 1000/1m, got %q", v)
	}
	return n, d, nil
}
