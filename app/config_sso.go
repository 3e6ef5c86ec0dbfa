package app

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-rounds/rounds/sso"
)

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
	for _, s := range []durationSetting{{name: "OIDC_RECHECK", to: &c.Recheck, example: "5m"},
		{name: "OIDC_TIMEOUT", to: &c.Timeout, example: "5m"}} {
		if err := s.read(getenv(s.name)); err != nil {
			return c, err
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
