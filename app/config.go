package app

import (
	"crypto/sha256"
	"crypto/x509"
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

	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/localproc"
	"github.com/mcp-rounds/rounds/maillink"
	"github.com/mcp-rounds/rounds/mcpclient"
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
	// serversFile is MCP_SERVERS_FILE's path, named in what is wrong with
	// an entry found at start.
	serversFile string
	Roots       map[string][]store.Root // roots/list answers by server name, from MCP_ROOTS
	RoundTTL    time.Duration
	MaxRounds   int
	// StateRestarts caps how often a call's server is asked afresh by
	// itself after it forgot the call's questions; zero for never.
	StateRestarts  int
	RequestTimeout time.Duration
	HeldTimeout    time.Duration
	AgentWait      time.Duration // how long an agent's request is held open (AGENT_WAIT)
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
	// Slack is Rounds in Slack (SLACK_*); off without a bot token.
	Slack SlackConfig
	// MailDecisions says who may decide with a mail's link
	// (MAIL_DECISIONS): maillink.SignIn or maillink.ByLink.
	MailDecisions string
	// IconAllowPrivate lets tools' icons come from a server whose name
	// resolves to a private address (ICON_ALLOW_PRIVATE).
	IconAllowPrivate bool
	// ClientMetadataLoopback and ClientMetadataRootCAs let agents' client
	// ID metadata documents come from a loopback address with a test's
	// certificate. Tests only: no setting reads them.
	ClientMetadataLoopback bool
	ClientMetadataRootCAs  *x509.CertPool
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
	// TaskWorkers is how many task polls one instance runs at once, apart
	// from every other job; TaskMaxLifetime how long a task without a
	// lifetime of its own is followed.
	TaskWorkers     int
	TaskMaxLifetime time.Duration
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
	// MaxTasks is how many tasks the server runs at once (MCP_SERVERS_FILE
	// only); zero leaves what the admin page set.
	MaxTasks int
	// AgentQuestions, from MCP_SERVERS_FILE, says who answers the
	// questions of calls agents start; "" leaves what the admin page set.
	AgentQuestions string
	// Approvals, from MCP_SERVERS_FILE, are the server's approval rules;
	// nil leaves what the admin page set.
	Approvals *approvals.Policy
}

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/rounds?sslmode=disable"

// DefaultReadMaxLag is how far the read replica may lag before the lists
// read from the primary instead.
const DefaultReadMaxLag = 10 * time.Second

var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// LoadConfig reads the configuration through getenv (os.Getenv, or a map
// in tests) and says in words what is wrong with a setting.
func LoadConfig(getenv func(string) string) (Config, error) {
	cfg := databaseConfig(getenv)
	cfg.DatabaseReadURL = getenv("DATABASE_READ_URL")
	cfg.ListenAddr = or(getenv("LISTEN_ADDR"), defaultListenAddr)
	cfg.Version = "dev"
	cfg.PprofAddr = getenv("PPROF_ADDR")
	cfg.TrustedHeader = getenv("TRUSTED_PROXY_HEADER")
	cfg.AdminPassword = getenv("ADMIN_PASSWORD")
	for _, step := range []func(*Config, func(string) string) error{
		(*Config).readNumbers,
		(*Config).readSessions,
		(*Config).readReach,
		(*Config).readSlack,
		(*Config).readMailDecisions,
		(*Config).readTrusted,
		(*Config).readCredentialsKey,
		(*Config).readSignIn,
		(*Config).readServers,
	} {
		if err := step(&cfg, getenv); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

const defaultListenAddr = "127.0.0.1:8080"

// databaseConfig is where the database is (DATABASE_URL and
// DATABASE_DIRECT_URL): all that the management commands read to reach
// it, and where LoadConfig starts.
func databaseConfig(getenv func(string) string) Config {
	return Config{DatabaseURL: or(getenv("DATABASE_URL"), defaultDatabaseURL), DatabaseDirectURL: getenv("DATABASE_DIRECT_URL")}
}

// readSessions reads SESSION_KEYS, the secrets sessions are signed and
// encrypted with, and PUBLIC_URL, which says whether cookies are secure.
func (c *Config) readSessions(getenv func(string) string) error {
	for key := range strings.SplitSeq(getenv("SESSION_KEYS"), ",") {
		if key = strings.TrimSpace(key); key == "" {
			continue
		}
		if len(key) < 32 {
			return errors.New("SESSION_KEYS: each key must be at least 32 characters")
		}
		c.SessionKeys = append(c.SessionKeys, sessionKeyPair(key)...)
	}
	if v := getenv("PUBLIC_URL"); v != "" {
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			return fmt.Errorf("PUBLIC_URL: want an absolute URL, got %q", v)
		}
		c.SecureCookies = u.Scheme == "https"
		c.PublicURL = strings.TrimRight(v, "/")
		c.PublicOrigin = u.Scheme + "://" + u.Host
	}
	return nil
}

// readReach reads how people are reached (round mail, webhooks) and where
// tools' icons may come from.
func (c *Config) readReach(getenv func(string) string) error {
	var err error
	if c.Mail, err = engine.ParseMail(getenv("SMTP_URL"), getenv("MAIL_FROM")); err != nil {
		return err
	}
	for _, s := range []struct {
		name string
		to   *bool
	}{{"WEBHOOK_ALLOW_PRIVATE", &c.WebhookAllowPrivate}, {"ICON_ALLOW_PRIVATE", &c.IconAllowPrivate}} {
		if v := getenv(s.name); v != "" {
			if *s.to, err = strconv.ParseBool(v); err != nil {
				return fmt.Errorf("%s: want true or false, got %q", s.name, v)
			}
		}
	}
	return nil
}

// readMailDecisions reads MAIL_DECISIONS: whether a mail's link decides
// only for the person mailed once signed in (signin, the default), or for
// whoever holds it (link).
func (c *Config) readMailDecisions(getenv func(string) string) error {
	switch v := getenv("MAIL_DECISIONS"); v {
	case "", maillink.SignIn:
		c.MailDecisions = maillink.SignIn
	case maillink.ByLink:
		c.MailDecisions = maillink.ByLink
	default:
		return fmt.Errorf("MAIL_DECISIONS: want signin (the person mailed signs in to decide) or link (the link alone decides), got %q", v)
	}
	return nil
}

// readTrusted reads the addresses trusted: TRUSTED_PROXIES, which may set
// TRUSTED_PROXY_HEADER, and METRICS_ALLOW, which may scrape /metrics
// without a token.
func (c *Config) readTrusted(getenv func(string) string) error {
	for p := range strings.SplitSeq(getenv("TRUSTED_PROXIES"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return fmt.Errorf("TRUSTED_PROXIES: %q is neither an address nor a CIDR range", p)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, prefix)
	}
	if c.TrustedHeader != "" && len(c.TrustedProxies) == 0 {
		return errors.New("TRUSTED_PROXY_HEADER needs TRUSTED_PROXIES: the addresses allowed to set it")
	}
	var err error
	c.MetricsAllow, err = parsePrefixes("METRICS_ALLOW", or(getenv("METRICS_ALLOW"), "127.0.0.0/8,::1"))
	return err
}

// readCredentialsKey reads CREDENTIALS_KEY, which servers' credentials are
// encrypted with; without it, one is kept in Postgres.
func (c *Config) readCredentialsKey(getenv func(string) string) error {
	var err error
	c.CredentialsKey, err = parseCredentialsKey(getenv("CREDENTIALS_KEY"))
	return err
}

// parseCredentialsKey reads CREDENTIALS_KEY; nil when it is empty.
func parseCredentialsKey(v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(key) != 32 {
		return key, errors.New("CREDENTIALS_KEY: want 32 random bytes in base64 (openssl rand -base64 32)")
	}
	return key, nil
}

// readSignIn reads single sign-on (OIDC_*) and PASSWORD_SIGN_IN, which
// may be off only when there is another way in.
func (c *Config) readSignIn(getenv func(string) string) error {
	var err error
	if c.SSO, err = parseSSO(getenv); err != nil {
		return err
	}
	switch v := getenv("PASSWORD_SIGN_IN"); v {
	case "", "on":
	case "off":
		if c.SSO.Issuer == "" && c.TrustedHeader == "" {
			return errors.New("PASSWORD_SIGN_IN=off needs another way in: OIDC_ISSUER or TRUSTED_PROXY_HEADER")
		}
		c.PasswordSignInOff = true
	default:
		return fmt.Errorf("PASSWORD_SIGN_IN: want on or off, got %q", v)
	}
	return nil
}

// readServers reads the servers MCP_SERVERS and MCP_SERVERS_FILE name,
// how much of local servers' stderr is logged, and the roots MCP_ROOTS
// gives servers.
func (c *Config) readServers(getenv func(string) string) error {
	var err error
	if v, ok := lookup(getenv, "MCP_SERVERS"); ok {
		c.serversSet = true
		if c.Servers, err = parseServers(v); err != nil {
			return err
		}
	}
	if path := getenv("MCP_SERVERS_FILE"); path != "" {
		more, err := loadServersFile(path, getenv)
		if err != nil {
			return err
		}
		for _, s := range more {
			if slices.ContainsFunc(c.Servers, func(o ServerConfig) bool { return o.Name == s.Name }) {
				return fmt.Errorf("MCP_SERVERS_FILE: server %s is named in MCP_SERVERS too", s.Name)
			}
		}
		c.serversSet, c.serversFile = true, path
		c.Servers = append(c.Servers, more...)
	}
	if c.StderrLogLines, c.StderrLogPeriod, err = parseStderrLog(getenv("LOCAL_STDERR_LOG")); err != nil {
		return err
	}
	c.Roots, err = parseRoots(getenv("MCP_ROOTS"))
	return err
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
