package app

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigSignOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want SSOConfig
		off  bool
		err  string
	}{
		{"OK", map[string]string{"OIDC_ISSUER": "https://idp.example", "OIDC_CLIENT_ID": "rounds", "OIDC_CLIENT_SECRET": "s",
			"OIDC_NAME": "Okta", "OIDC_GROUPS_CLAIM": "roles", "OIDC_ADMIN_GROUPS": " admins, ops-leads ,", "PASSWORD_SIGN_IN": "off"},
			SSOConfig{Issuer: "https://idp.example", ClientID: "rounds", ClientSecret: "s", Name: "Okta", GroupsClaim: "roles",
				AdminGroups: []string{"admins", "ops-leads"}, Recheck: 5 * time.Minute, Timeout: 15 * time.Second}, true, ""},
		{"OKLimits", map[string]string{"OIDC_ISSUER": "https://accounts.google.com", "OIDC_CLIENT_ID": "rounds",
			"OIDC_ALLOWED_DOMAINS": "example.com, @example.org", "OIDC_ALLOWED_GROUPS": "staff", "OIDC_TEAM_GROUPS": "ops,approvers",
			"OIDC_RECHECK": "90s", "OIDC_TIMEOUT": "5s"},
			SSOConfig{Issuer: "https://accounts.google.com", ClientID: "rounds", AllowedDomains: []string{"example.com", "example.org"},
				AllowedGroups: []string{"staff"}, TeamGroups: []string{"ops", "approvers"}, Recheck: 90 * time.Second,
				Timeout: 5 * time.Second}, false, ""},
		{"OKHTTPLoopback", map[string]string{"OIDC_ISSUER": "http://127.0.0.1:5556/dex", "OIDC_CLIENT_ID": "x"},
			SSOConfig{Issuer: "http://127.0.0.1:5556/dex", ClientID: "x", Recheck: 5 * time.Minute, Timeout: 15 * time.Second}, false, ""},
		{"ErrHTTPIssuer", map[string]string{"OIDC_ISSUER": "http://idp.example", "OIDC_CLIENT_ID": "x"}, SSOConfig{}, false, "plain http"},
		{"ErrRecheck", map[string]string{"OIDC_ISSUER": "https://idp.example", "OIDC_CLIENT_ID": "x", "OIDC_RECHECK": "0"}, SSOConfig{}, false, "OIDC_RECHECK"},
		{"ErrDomain", map[string]string{"OIDC_ISSUER": "https://idp.example", "OIDC_CLIENT_ID": "x", "OIDC_ALLOWED_DOMAINS": "ada@example.com"}, SSOConfig{}, false, "OIDC_ALLOWED_DOMAINS"},
		{"OKNone", map[string]string{}, SSOConfig{}, false, ""},
		{"ErrNoClient", map[string]string{"OIDC_ISSUER": "https://idp.example"}, SSOConfig{}, false, "OIDC_CLIENT_ID"},
		{"ErrIssuer", map[string]string{"OIDC_ISSUER": "idp.example", "OIDC_CLIENT_ID": "x"}, SSOConfig{}, false, "OIDC_ISSUER"},
		{"ErrClientWithoutIssuer", map[string]string{"OIDC_CLIENT_ID": "x"}, SSOConfig{}, false, "OIDC_ISSUER"},
		{"ErrPasswordOffNoWayIn", map[string]string{"PASSWORD_SIGN_IN": "off"}, SSOConfig{}, false, "another way in"},
		{"ErrPasswordValue", map[string]string{"PASSWORD_SIGN_IN": "no"}, SSOConfig{}, false, "PASSWORD_SIGN_IN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.SSO, tc.want) || cfg.PasswordSignInOff != tc.off {
				t.Errorf("SSO = %+v, off = %v; want %+v, %v", cfg.SSO, cfg.PasswordSignInOff, tc.want, tc.off)
			}
		})
	}
}
