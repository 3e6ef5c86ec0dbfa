package journeys

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/sso/ssotest"
)

// TestBrowserSignOn signs people in through a real OpenID provider (the
// example provider of zitadel/oidc, run in the test), in headless Chromium
// at laptop and phone widths, with password sign-in off and two instances
// over one database. The sign-in starts on instance B and comes back
// signed in on A (PUBLIC_URL), with JavaScript off on the phone; the account page, on B, says how the person
// signs in and which teams their groups made them join, and the admin link
// is there because of an admin group. A forged callback and the replay of
// the real one sign nobody in. Sign-out goes through the provider's
// end_session_endpoint and back; the groups change at the provider, and
// the next sign-in lands in the same account with the new teams, keeping a
// team an admin added by hand, and no admin rights.
func TestBrowserSignOn(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	addrA := freeLoopback(t)
	public := "http://" + addrA
	people := []ssotest.Person{
		{ID: "sub-1280", Username: "ada.lovelace@example.com", Password: "ada's password", Email: "ada@example.com",
			Groups: []string{"approvers", "rounds-admins"}},
		{ID: "sub-390", Username: "ada.lovelace@example.com-phone", Password: "ada's password", Email: "ada@example.com",
			Groups: []string{"approvers", "rounds-admins"}},
	}
	provider := ssotest.Start(t, public+"/auth/oidc/callback", public+"/login", people...)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "PUBLIC_URL": public,
		"OIDC_ISSUER": provider.Issuer, "OIDC_CLIENT_ID": provider.ClientID, "OIDC_CLIENT_SECRET": provider.ClientSecret,
		"OIDC_ADMIN_GROUPS": "rounds-admins", "PASSWORD_SIGN_IN": "off"}
	a := startInstance(t, db, withEnv(env, "LISTEN_ADDR", addrA), nil)
	b := startInstance(t, db, env, nil)
	for _, team := range []string{"approvers", "auditors", "ops"} {
		cli(t, db, "", "team", "add", team)
	}

	for i, width := range []int64{1280, 390} {
		person := people[i]
		t.Run(strconv.Itoa(int(width)), func(t *testing.T) {
			// The phone signs in with JavaScript off: nothing of it needs any.
			j := newJourneyFor(t, browser, width == 1280, 3*time.Minute)
			j.emulate(width, "UTC")

			j.do("open the sign-in page on B", chromedp.Navigate(b.URL+"/account"),
				chromedp.WaitVisible(chromedp.CSS(`a[data-testid="sign-in-sso"]`)))
			if got := j.text(`a[data-testid="sign-in-sso"]`); !strings.Contains(got, "single sign-on") {
				t.Errorf("the button says %q, want it to say single sign-on", got)
			}
			if evaluate[bool](j, "look for the password form", `!!document.querySelector('input[type="password"]')`) {
				t.Error("the sign-in page offers a password form with PASSWORD_SIGN_IN=off")
			}
			j.axeZero("the sign-in page with single sign-on only")

			j.signOnAt(provider, person)
			j.eventually("back on A, at the page asked for", `location.href === "`+a.URL+`/account"`, "", 20*time.Second)
			j.do("see who is signed in", chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-name"]`)))
			name := j.text(`[data-testid="account-name"]`)
			if want := strings.SplitN(person.Username, "@", 2)[0]; !strings.HasPrefix(name, "ada.lovelace") {
				t.Errorf("the account is named %q, want it made from preferred_username (%s…)", name, want)
			}

			j.do("open the account page on B", chromedp.Navigate(b.URL+"/account"),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-sign-in"]`)))
			if got := j.text(`[data-testid="account-sign-in"]`); !strings.Contains(got, "Single sign-on") {
				t.Errorf("the account page says %q, want single sign-on", got)
			}
			if got := j.teams(); got != "approvers (from your groups)" {
				t.Errorf("teams = %q, want approvers from the groups", got)
			}
			if !evaluate[bool](j, "look for the admin link", `!!document.querySelector('header a[href="/admin"]')`) {
				t.Error("no admin link for a member of OIDC_ADMIN_GROUPS")
			}
			j.axeZero("the account page of a person signed in by single sign-on")
			j.do("open the users list", chromedp.Navigate(a.URL+"/admin/users"),
				chromedp.WaitVisible(chromedp.CSS(`tr[data-testid="user-row"][data-name="admin"]`)))
			if got := j.text(`tr[data-testid="user-row"][data-name="` + name + `"] [data-testid="user-sign-in"]`); !strings.Contains(got, "Single sign-on") {
				t.Errorf("the users list says %s signs in with %q", name, got)
			}
			if got := j.text(`tr[data-testid="user-row"][data-name="admin"] [data-testid="user-sign-in"]`); got != "Password (switched off here)" {
				t.Errorf("the users list says admin signs in with %q", got)
			}
			j.axeZero("the users list")
			callbacks := provider.Callbacks()
			callback := callbacks[len(callbacks)-1]

			// An admin adds the person to a team by hand; at the provider,
			// their groups change.
			cli(t, db, "", "team", "member", "add", "ops", name)
			provider.SetGroups(person.ID, "Auditors")

			j.do("sign out", chromedp.Click(chromedp.CSS(`header form[action="/logout"] button`)))
			j.eventually("back at the sign-in page through the provider's sign-out", `location.href === "`+a.URL+`/login"`, "", 20*time.Second)
			if !slices.ContainsFunc(provider.Requests(), func(r string) bool { return strings.HasPrefix(r, "/end_session?") }) {
				t.Error("sign-out did not go through the provider's end_session_endpoint")
			}
			j.do("find the account gone", chromedp.Navigate(b.URL+"/account"),
				chromedp.WaitVisible(chromedp.CSS(`a[data-testid="sign-in-sso"]`)))

			// The callback that signed the person in, again, and one made up.
			for what, u := range map[string]string{"the replayed callback": callback,
				"a forged callback": a.URL + "/auth/oidc/callback?code=made-up&state=made-up"} {
				j.do("open "+what, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS(`[data-testid="login-error"]`)))
				if got := j.text(`[data-testid="login-error"]`); !strings.Contains(got, "nobody was signed in") {
					t.Errorf("%s: the page says %q", what, got)
				}
				if evaluate[bool](j, "look for who is signed in", `!!document.querySelector('header .who')`) {
					t.Errorf("%s signed someone in", what)
				}
			}
			j.axeZero("a refused callback")

			j.do("sign in again", chromedp.Navigate(a.URL+"/login"),
				chromedp.WaitVisible(chromedp.CSS(`a[data-testid="sign-in-sso"]`)))
			j.signOnAt(provider, person)
			j.do("open the account page", chromedp.Navigate(b.URL+"/account"),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-name"]`)))
			if got := j.text(`[data-testid="account-name"]`); got != name {
				t.Errorf("signed in again as %q, want the same account %q", got, name)
			}
			if got := j.teams(); got != "auditors (from your groups), ops" {
				t.Errorf("teams = %q, want auditors from the groups and ops kept", got)
			}
			if evaluate[bool](j, "look for the admin link", `!!document.querySelector('header a[href="/admin"]')`) {
				t.Error("still an admin after leaving the admin group")
			}
		})
	}

	t.Run("PasswordRefused", func(t *testing.T) {
		// A page of an instance with passwords on gives the CSRF token; the
		// instance with them off refuses the password all the same.
		c := startInstance(t, db, map[string]string{"MCP_SERVERS": env["MCP_SERVERS"]}, nil)
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := hc.Get(c.URL + "/login")
		if err != nil {
			t.Fatal(err)
		}
		page := readAll(t, resp)
		form := url.Values{"username": {"admin"}, "password": {adminPassword}, "csrf_token": {csrfFrom(page)}, "next": {"/"}}
		resp, err = hc.PostForm(a.URL+"/login", form)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "switched off") {
			t.Errorf("password sign-in on A: %d %s; want 403 saying it is switched off", resp.StatusCode, body)
		}
		resp, err = hc.PostForm(c.URL+"/login", form)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("the same sign-in on an instance with passwords on: %d, want it to work (the form was right)", resp.StatusCode)
		}
	})
}

// signOnAt follows the sign-in button to the provider and signs in there.
func (j *journey) signOnAt(p *ssotest.Provider, who ssotest.Person) {
	j.t.Helper()
	j.do("go to the provider", chromedp.Click(chromedp.CSS(`a[data-testid="sign-in-sso"]`)),
		chromedp.WaitVisible(chromedp.ID("username")))
	if origin := evaluate[string](j, "where", `location.origin`); origin != p.Issuer {
		j.t.Fatalf("the sign-in form is at %s, want the provider %s", origin, p.Issuer)
	}
	j.do("sign in at the provider",
		chromedp.SendKeys(chromedp.ID("username"), who.Username),
		chromedp.SendKeys(chromedp.ID("password"), who.Password),
		chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`header .who`)))
}

// teams is what the account page says of the person's teams.
func (j *journey) teams() string {
	j.t.Helper()
	return evaluate[string](j, "read the teams", `[...document.querySelectorAll('[data-testid="account-team"]')]
		.map(e => e.textContent.trim().replace(/\s+/g, " ")).join(", ")`)
}

// withEnv is env with one more setting.
func withEnv(env map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range env {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
