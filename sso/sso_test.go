package sso_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

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
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no login form at the provider:\n%s", page)
	}
	form := url.Values{"id": {string(m[1])}, "username": {who.Username}, "password": {who.Password}}
	resp, err = hc.PostForm(resp.Request.URL.ResolveReference(&url.URL{Path: "/login/username"}).String(), form)
	if err != nil {
		t.Fatal(err)
	}
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

func TestProviderDown(t *testing.T) {
	t.Parallel()
	c := sso.New(sso.Config{Issuer: "http://127.0.0.1:1", ClientID: "x", RedirectURL: redirect})
	if _, _, err := c.Begin(context.Background(), "/"); !errors.Is(err, sso.ErrProvider) {
		t.Errorf("err = %v, want ErrProvider", err)
	}
}
