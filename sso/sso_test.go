package sso_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/sso"
	"github.com/mcp-rounds/rounds/sso/ssotest"
)

const redirect = "http://127.0.0.1:1/auth/oidc/callback"

var ada = ssotest.Person{ID: "sub-ada", Username: "ada", Password: "ada's password", Email: "ada@example.com",
	Groups: []string{"Approvers", "rounds-admins"}}

// signInAt goes through the provider's login page as a browser would and
// returns the callback's query, without following it.
func signInAt(t *testing.T, authURL string, who ssotest.Person) url.Values {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	var callback *url.URL
	hc := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), redirect) {
			callback = r.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp := ssotest.LogIn(t, hc, authURL, who)
	resp.Body.Close()
	if callback == nil {
		t.Fatalf("the provider did not send the browser back (status %d)", resp.StatusCode)
	}
	return callback.Query()
}

func newClient(p *ssotest.Provider) *sso.Client {
	return sso.New(sso.Config{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		RedirectURL: redirect, PostLogoutURL: "http://127.0.0.1:1/login", AdminGroups: []string{"Rounds-Admins"}})
}

func TestFinish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := ssotest.Start(t, redirect, "http://127.0.0.1:1/login", ada)
	c := newClient(p)

	t.Run("OK", func(t *testing.T) {
		authURL, pend, err := c.Begin(ctx, "/calls")
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(authURL)
		if q := u.Query(); q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || q.Get("state") != pend.State {
			t.Errorf("authorization URL %s lacks PKCE, nonce or state", authURL)
		}
		if !strings.Contains(u.Query().Get("scope"), "offline_access") {
			t.Errorf("authorization URL %s does not ask for a refresh token, which the provider offers", authURL)
		}
		id, err := c.Finish(ctx, pend, signInAt(t, authURL, ada))
		if err != nil {
			t.Fatal(err)
		}
		if id.Subject != "sub-ada" || id.Issuer != p.Issuer || id.Name != "ada" || id.Email != "ada@example.com" {
			t.Errorf("identity = %+v", id)
		}
		if !slices.Equal(id.Groups, ada.Groups) || !id.Admin {
			t.Errorf("groups = %v, admin = %v; want %v and admin (OIDC_ADMIN_GROUPS matches without case)", id.Groups, id.Admin, ada.Groups)
		}
		if id.Grant.RefreshToken == "" {
			t.Error("no refresh token kept to check the person again")
		}
		if end := c.EndSessionURL(ctx, id.IDToken); !strings.Contains(end, "id_token_hint=") || !strings.HasPrefix(end, p.Issuer) {
			t.Errorf("end-session URL = %q", end)
		}
	})

	t.Run("ErrReplayedCode", func(t *testing.T) {
		authURL, pend, _ := c.Begin(ctx, "/")
		q := signInAt(t, authURL, ada)
		if _, err := c.Finish(ctx, pend, q); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Finish(ctx, pend, q); !errors.Is(err, sso.ErrRefused) {
			t.Errorf("the same code again: err = %v, want it refused", err)
		}
	})

	t.Run("ErrOtherBrowsersState", func(t *testing.T) {
		authURL, _, _ := c.Begin(ctx, "/")
		_, mine, _ := c.Begin(ctx, "/")
		// The callback of someone else's sign-in, brought to this browser.
		if _, err := c.Finish(ctx, mine, signInAt(t, authURL, ada)); !errors.Is(err, sso.ErrRefused) {
			t.Errorf("err = %v, want the callback refused", err)
		}
	})

	t.Run("ErrNonce", func(t *testing.T) {
		authURL, pend, _ := c.Begin(ctx, "/")
		q := signInAt(t, authURL, ada)
		pend.Nonce = "another"
		if _, err := c.Finish(ctx, pend, q); !errors.Is(err, sso.ErrRefused) {
			t.Errorf("err = %v, want an ID token with another nonce refused", err)
		}
	})

	t.Run("GroupsChange", func(t *testing.T) {
		p.SetGroups("sub-ada", "Approvers")
		defer p.SetGroups("sub-ada", ada.Groups...)
		authURL, pend, _ := c.Begin(ctx, "/")
		id, err := c.Finish(ctx, pend, signInAt(t, authURL, ada))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(id.Groups, []string{"Approvers"}) || id.Admin {
			t.Errorf("groups = %v, admin = %v; want [Approvers], not admin", id.Groups, id.Admin)
		}
	})
}

// TestRecheck asks the provider again about a person signed in, as
// Rounds does every OIDC_RECHECK: groups changed at the provider show, a
// person deleted there is gone, and so is one with nothing left to ask
// with.
func TestRecheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bob := ssotest.Person{ID: "sub-bob", Username: "bob", Password: "bob's password", Email: "bob@example.com",
		Groups: []string{"rounds-admins"}}
	p := ssotest.Start(t, redirect, "http://127.0.0.1:1/login", ada, bob)
	c := newClient(p)
	signIn := func(who ssotest.Person) *sso.Identity {
		t.Helper()
		authURL, pend, _ := c.Begin(ctx, "/")
		id, err := c.Finish(ctx, pend, signInAt(t, authURL, who))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	t.Run("OK", func(t *testing.T) {
		id := signIn(ada)
		p.SetGroups("sub-ada", "Approvers")
		defer p.SetGroups("sub-ada", ada.Groups...)
		again, err := c.Recheck(ctx, id.Issuer, id.Subject, id.Grant)
		if err != nil {
			t.Fatal(err)
		}
		if again.Admin || !slices.Equal(again.Groups, []string{"Approvers"}) || again.Email != ada.Email {
			t.Errorf("after the change: %+v; want groups [Approvers], not admin", again)
		}
		if again.Grant.RefreshToken == "" || again.Grant.RefreshToken == id.Grant.RefreshToken {
			t.Error("the rotated refresh token is not the one to keep")
		}
		if _, err := c.Recheck(ctx, id.Issuer, id.Subject, id.Grant); !errors.Is(err, sso.ErrGone) {
			t.Errorf("the used refresh token again: err = %v, want ErrGone", err)
		}
	})

	t.Run("ErrDeleted", func(t *testing.T) {
		id := signIn(bob)
		p.Delete("sub-bob")
		if _, err := c.Recheck(ctx, id.Issuer, id.Subject, id.Grant); !errors.Is(err, sso.ErrGone) {
			t.Errorf("err = %v, want ErrGone for a person the provider deleted", err)
		}
		// Without a refresh token, the access token asks userinfo.
		if _, err := c.Recheck(ctx, id.Issuer, id.Subject, sso.Grant{AccessToken: id.Grant.AccessToken}); !errors.Is(err, sso.ErrGone) {
			t.Errorf("userinfo: err = %v, want ErrGone for a person the provider deleted", err)
		}
	})

	t.Run("ErrNothingToAskWith", func(t *testing.T) {
		id := signIn(ada)
		for name, g := range map[string]sso.Grant{"none": {},
			"expired": {AccessToken: id.Grant.AccessToken, Expiry: time.Now().Add(-time.Minute)}} {
			if _, err := c.Recheck(ctx, id.Issuer, id.Subject, g); !errors.Is(err, sso.ErrGone) {
				t.Errorf("%s: err = %v, want ErrGone", name, err)
			}
		}
		if _, err := c.Recheck(ctx, "https://other.example", id.Subject, id.Grant); !errors.Is(err, sso.ErrGone) {
			t.Errorf("another issuer: err = %v, want ErrGone", err)
		}
	})

	t.Run("ErrLeftAllowedGroups", func(t *testing.T) {
		strict := sso.New(sso.Config{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
			RedirectURL: redirect, AllowedGroups: []string{"approvers"}})
		authURL, pend, _ := strict.Begin(ctx, "/")
		id, err := strict.Finish(ctx, pend, signInAt(t, authURL, ada))
		if err != nil {
			t.Fatal(err)
		}
		p.SetGroups("sub-ada", "rounds-admins")
		defer p.SetGroups("sub-ada", ada.Groups...)
		if _, err := strict.Recheck(ctx, id.Issuer, id.Subject, id.Grant); !errors.Is(err, sso.ErrNotAllowed) {
			t.Errorf("err = %v, want ErrNotAllowed once out of OIDC_ALLOWED_GROUPS", err)
		}
	})
}

// TestAllowed keeps out those OIDC_ALLOWED_DOMAINS and OIDC_ALLOWED_GROUPS
// do not name, as a provider anyone can have an account at (Google,
// GitLab.com, a multi-tenant Entra app) needs; OIDC_TEAM_GROUPS names the
// groups that are teams.
func TestAllowed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	people := []ssotest.Person{
		ada,
		{ID: "sub-mal", Username: "mal", Password: "mal's password", Email: "mal@example.com", Unverified: true},
		{ID: "sub-gil", Username: "gil", Password: "gil's password", Email: "gil@gmail.com",
			Claims: map[string]any{"hd": "Example.com"}},
		{ID: "sub-eve", Username: "eve", Password: "eve's password", Email: "eve@elsewhere.example", Groups: []string{"approvers"}},
	}
	p := ssotest.Start(t, redirect, "http://127.0.0.1:1/login", people...)
	for _, tc := range []struct {
		name    string
		cfg     sso.Config
		allowed []bool // of people, in order
	}{
		{"Everyone", sso.Config{}, []bool{true, true, true, true}},
		{"Domains", sso.Config{AllowedDomains: []string{"example.com"}}, []bool{true, false, true, false}},
		{"Groups", sso.Config{AllowedGroups: []string{"APPROVERS"}}, []bool{true, false, false, true}},
		{"Both", sso.Config{AllowedDomains: []string{"example.com"}, AllowedGroups: []string{"approvers"}}, []bool{true, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Issuer, cfg.ClientID, cfg.ClientSecret, cfg.RedirectURL = p.Issuer, p.ClientID, p.ClientSecret, redirect
			c := sso.New(cfg)
			for i, who := range people {
				authURL, pend, _ := c.Begin(ctx, "/")
				_, err := c.Finish(ctx, pend, signInAt(t, authURL, who))
				if got := err == nil; got != tc.allowed[i] || err != nil && !errors.Is(err, sso.ErrNotAllowed) {
					t.Errorf("%s: err = %v, want allowed %v", who.Username, err, tc.allowed[i])
				}
			}
		})
	}

	t.Run("TeamGroups", func(t *testing.T) {
		c := sso.New(sso.Config{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret, RedirectURL: redirect,
			TeamGroups: []string{"approvers"}})
		authURL, pend, _ := c.Begin(ctx, "/")
		id, err := c.Finish(ctx, pend, signInAt(t, authURL, ada))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(id.Teams, []string{"Approvers"}) || !slices.Equal(id.Groups, ada.Groups) {
			t.Errorf("teams = %v of groups %v; want only Approvers", id.Teams, id.Groups)
		}
	})

	if got := sso.New(sso.Config{Issuer: p.Issuer}).Provider(); got != "127.0.0.1" {
		t.Errorf("the provider is called %q, want its issuer's host", got)
	}
}

// TestProviderDown: a provider that takes connections and never answers
// costs the sign-ins that wait for it one timeout together, not one each
// after the other; the ones that come after are told at once.
func TestProviderDown(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	c := sso.New(sso.Config{Issuer: ssotest.Blackhole(t), ClientID: "x", RedirectURL: redirect, Timeout: timeout})
	start := time.Now()
	took := make(chan time.Duration, 4)
	for range 4 {
		go func() {
			if _, _, err := c.Begin(context.Background(), "/"); !errors.Is(err, sso.ErrProvider) {
				t.Errorf("err = %v, want ErrProvider", err)
			}
			took <- time.Since(start)
		}()
	}
	for range 4 {
		if d := <-took; d > timeout*3/2 {
			t.Errorf("a sign-in was told after %s; want about %s, as the others", d, timeout)
		}
	}
	again := time.Now()
	if _, _, err := c.Begin(context.Background(), "/"); !errors.Is(err, sso.ErrProvider) || time.Since(again) > timeout/2 {
		t.Errorf("the next sign-in: err = %v after %s; want ErrProvider at once", err, time.Since(again))
	}
}
