package journeys

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/sso/ssotest"
)

// TestSignOnRecheck: a person signed on through the provider loses, at the
// next check there (OIDC_RECHECK, shortened here), what the provider took
// away meanwhile, without signing on again: out of the admin group, their
// session no longer reaches /admin and their API token no longer reads
// other people's calls, on both instances; out of a team's group, the
// team's calls go too. The provider is asked about once per OIDC_RECHECK,
// not at every request. A person the provider deletes is signed out, and
// their token stops.
func TestSignOnRecheck(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	addrA := freeLoopback(t)
	public := "http://" + addrA
	ada := ssotest.Person{ID: "sub-ada", Username: "ada", Password: "ada's password", Email: "ada@example.com",
		Groups: []string{"approvers", "rounds-admins"}}
	bob := ssotest.Person{ID: "sub-bob", Username: "bob", Password: "bob's password", Email: "bob@example.com",
		Groups: []string{"rounds-admins"}}
	provider := ssotest.Start(t, public+"/auth/oidc/callback", public+"/login", ada, bob)
	const recheck = time.Second
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "PUBLIC_URL": public,
		"OIDC_ISSUER": provider.Issuer, "OIDC_CLIENT_ID": provider.ClientID, "OIDC_CLIENT_SECRET": provider.ClientSecret,
		"OIDC_ADMIN_GROUPS": "rounds-admins", "OIDC_RECHECK": recheck.String()}
	a := startInstance(t, db, withEnv(env, "LISTEN_ADDR", addrA), nil)
	b := startInstance(t, db, env, nil)
	cli(t, db, "", "team", "add", "approvers")
	cli(t, db, "a long password\n", "user", "add", "carol")
	carol := person(t, db, "carol")
	private := carol.startCall(a.URL, "approve", `{}`)
	status, body := carol.do("POST", a.URL+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"approve","arguments":{},"assignee":"team:approvers"}`)
	if status != http.StatusCreated {
		t.Fatalf("start a call for the team: %d %s", status, body)
	}
	forTeam := strings.Split(strings.Split(string(body), `"id":"`)[1], `"`)[0]

	adaWeb := signOnHTTP(t, a.URL, "/admin", ada)
	adaAPI := person(t, db, "ada")
	for _, base := range []string{a.URL, b.URL} {
		if got := adaWeb.status(base + "/admin"); got != http.StatusOK {
			t.Fatalf("%s/admin for a member of the admin group: %d", base, got)
		}
		for _, id := range []string{private.ID, forTeam} {
			if got, body := adaAPI.do("GET", base+"/api/v1/calls/"+id, "", ""); got != http.StatusOK {
				t.Fatalf("the admin's token reads carol's call %s: %d %s", id, got, body)
			}
		}
	}

	// Out of the admin group at the provider; still in approvers.
	began := time.Now()
	provider.SetGroups(ada.ID, "approvers")
	requests := 0
	until(t, "the session and the token lose admin on both instances", 20*time.Second, func() bool {
		requests += 3
		return adaWeb.status(a.URL+"/admin") == http.StatusNotFound && adaWeb.status(b.URL+"/admin") == http.StatusNotFound &&
			adaAPI.status(b.URL+"/api/v1/calls/"+private.ID) == http.StatusNotFound
	})
	// Two more checks' worth of requests, on both instances.
	for end := time.Now().Add(2 * recheck); time.Now().Before(end); requests += 2 {
		for _, base := range []string{a.URL, b.URL} {
			if got := adaAPI.status(base + "/api/v1/calls/" + private.ID); got != http.StatusNotFound {
				t.Fatalf("the token of a former admin reads carol's call on %s: %d", base, got)
			}
		}
	}
	refreshes, elapsed := provider.Refreshes(ada.ID), time.Since(began)
	t.Logf("the provider was asked %d times in %s, for %d requests", refreshes, elapsed.Round(time.Millisecond), requests)
	if most := int(elapsed/recheck) + 2; refreshes > most || refreshes == 0 {
		t.Errorf("the provider was asked %d times in %s for %d requests; want 1 to %d (once per OIDC_RECHECK)",
			refreshes, elapsed.Round(time.Millisecond), requests, most)
	}
	if got := adaWeb.status(b.URL + "/account"); got != http.StatusOK {
		t.Errorf("the session of a person the provider still knows ended: %d", got)
	}
	if got := adaAPI.status(a.URL + "/api/v1/calls/" + forTeam); got != http.StatusOK {
		t.Errorf("the team's call, still in the team's group: %d", got)
	}

	// Out of the team's group too.
	provider.SetGroups(ada.ID)
	until(t, "the token loses the team's call", 20*time.Second, func() bool {
		return adaAPI.status(b.URL+"/api/v1/calls/"+forTeam) == http.StatusNotFound
	})

	// Deleted at the provider.
	bobWeb := signOnHTTP(t, b.URL, "/account", bob)
	bobAPI := person(t, db, "bob")
	if got := bobAPI.status(a.URL + "/api/v1/calls/" + private.ID); got != http.StatusOK {
		t.Fatalf("bob's token, an admin's, reads carol's call: %d", got)
	}
	provider.Delete(bob.ID)
	until(t, "the deleted person signed out and their token stopped", 20*time.Second, func() bool {
		return bobWeb.status(a.URL+"/account") == http.StatusSeeOther && bobAPI.status(b.URL+"/api/v1/calls") == http.StatusUnauthorized
	})
	if status, body := bobAPI.do("GET", a.URL+"/api/v1/calls", "", ""); !strings.Contains(string(body), "sign in again") {
		t.Errorf("the stopped token is told %d %s; want it to say its account must sign in again", status, body)
	}
	if out := cli(t, db, "", "team", "list"); strings.Contains(out, "ada") {
		t.Errorf("teams after the groups went:\n%s", out)
	}
}

// TestSignOnAllowed: with OIDC_ALLOWED_DOMAINS, a person the provider
// knows whose verified e-mail is elsewhere, or whose e-mail is not
// verified, is told their account there is not allowed, and no account is
// made; OIDC_TEAM_GROUPS keeps a group named like a team from joining it.
func TestSignOnAllowed(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	addr := freeLoopback(t)
	public := "http://" + addr
	ada := ssotest.Person{ID: "sub-ada", Username: "ada", Password: "ada's password", Email: "ada@example.com",
		Groups: []string{"approvers", "ops"}}
	eve := ssotest.Person{ID: "sub-eve", Username: "eve", Password: "eve's password", Email: "eve@elsewhere.example",
		Groups: []string{"approvers"}}
	mal := ssotest.Person{ID: "sub-mal", Username: "mal", Password: "mal's password", Email: "mal@example.com", Unverified: true}
	provider := ssotest.Start(t, public+"/auth/oidc/callback", public+"/login", ada, eve, mal)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "PUBLIC_URL": public,
		"LISTEN_ADDR": addr, "OIDC_ISSUER": provider.Issuer, "OIDC_CLIENT_ID": provider.ClientID,
		"OIDC_CLIENT_SECRET": provider.ClientSecret, "OIDC_ALLOWED_DOMAINS": "example.com", "OIDC_TEAM_GROUPS": "approvers"}, nil)
	cli(t, db, "", "team", "add", "approvers")
	cli(t, db, "", "team", "add", "ops")

	for _, who := range []ssotest.Person{eve, mal} {
		jar, _ := cookiejar.New(nil)
		resp := ssotest.LogIn(t, &http.Client{Jar: jar}, inst.URL+"/auth/oidc", who)
		page := readAll(t, resp)
		if want := "Your account at 127.0.0.1 is not allowed here."; resp.StatusCode != http.StatusForbidden || !strings.Contains(string(page), want) {
			t.Errorf("%s: %d, want 403 saying %q:\n%s", who.Username, resp.StatusCode, want, page)
		}
	}
	signOnHTTP(t, inst.URL, "/account", ada)
	users := cli(t, db, "", "user", "list")
	if strings.Contains(users, "eve") || strings.Contains(users, "mal") || !strings.Contains(users, "ada") {
		t.Errorf("accounts:\n%s\nwant ada's only", users)
	}
	teams := cli(t, db, "", "team", "list")
	for line := range strings.SplitSeq(teams, "\n") {
		if strings.HasPrefix(line, "approvers") != strings.Contains(line, "ada") {
			t.Errorf("teams:\n%s\nwant ada in approvers (OIDC_TEAM_GROUPS) and not in ops", teams)
		}
	}
}

// TestSignOnProviderDown: four people start signing in while the provider
// takes connections and never answers. Each is told it cannot be reached
// after one timeout (OIDC_TIMEOUT, shortened here), together, not one
// after the other; the next is told at once.
func TestSignOnProviderDown(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	inst := startInstance(t, newDatabase(t), map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil),
		"OIDC_ISSUER": ssotest.Blackhole(t), "OIDC_CLIENT_ID": "rounds", "OIDC_TIMEOUT": timeout.String()}, nil)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func() (int, time.Duration) {
		start := time.Now()
		resp, err := noRedirect.Get(inst.URL + "/auth/oidc")
		if err != nil {
			t.Error(err)
			return 0, 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if status, took := get(); status != http.StatusBadGateway || took > timeout*3/2 {
				t.Errorf("GET /auth/oidc: %d after %s; want 502 after about %s, as the others", status, took.Round(time.Millisecond), timeout)
			}
		})
	}
	wg.Wait()
	if status, took := get(); status != http.StatusBadGateway || took > timeout/2 {
		t.Errorf("the next GET /auth/oidc: %d after %s; want 502 at once", status, took.Round(time.Millisecond))
	}
}

// webClient is a browser without JavaScript, signed in through the
// provider.
type webClient struct {
	t  *testing.T
	hc *http.Client
}

// signOnHTTP signs who in at base through the provider, as a browser does,
// and checks that the sign-in lands on next.
func signOnHTTP(t *testing.T, base, next string, who ssotest.Person) *webClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	w := &webClient{t: t, hc: &http.Client{Jar: jar}}
	resp := ssotest.LogIn(t, w.hc, base+"/auth/oidc?next="+next, who)
	page := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != next {
		t.Fatalf("signing %s in ended at %s with %d:\n%s", who.Username, resp.Request.URL, resp.StatusCode, page)
	}
	w.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return w
}

// status is the status of a page, its redirects not followed.
func (w *webClient) status(u string) int {
	w.t.Helper()
	resp, err := w.hc.Get(u)
	if err != nil {
		w.t.Fatal(err)
	}
	readAll(w.t, resp)
	return resp.StatusCode
}

// status is the status of a GET, with the client's token.
func (c *client) status(u string) int {
	c.t.Helper()
	status, _ := c.do("GET", u, "", "")
	return status
}

// until polls cond until it holds, or fails the test after limit.
func until(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %s", what, limit)
		}
	}
}
