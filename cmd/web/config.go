package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// config is read once from the environment.
type config struct {
	DatabaseURL    string
	ListenAddr     string
	Servers        []serverConfig
	serversSet     bool
	RoundTTL       time.Duration
	MaxRounds      int
	RequestTimeout time.Duration
}

type serverConfig struct {
	Name string
	URL  string
}

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/rounds?sslmode=disable"

var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{
		DatabaseURL:    or(getenv("DATABASE_URL"), defaultDatabaseURL),
		ListenAddr:     or(getenv("LISTEN_ADDR"), "127.0.0.1:8080"),
		RoundTTL:       24 * time.Hour,
		MaxRounds:      10,
		RequestTimeout: 10 * time.Second,
	}
	var err error
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
	if v, ok := lookup(getenv, "MCP_SERVERS"); ok {
		cfg.serversSet = true
		if cfg.Servers, err = parseServers(v); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// parseServers reads MCP_SERVERS: name=url,name=url.
func parseServers(v string) ([]serverConfig, error) {
	var out []serverConfig
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, rawURL, ok := strings.Cut(item, "=")
		if !ok || !serverName.MatchString(name) {
			return nil, fmt.Errorf("MCP_SERVERS: %q is not name=url with a name of letters, digits, '.', '_' or '-'", item)
		}
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("MCP_SERVERS: %q needs an http or https URL", item)
		}
		out = append(out, serverConfig{Name: name, URL: rawURL})
	}
	return out, nil
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
