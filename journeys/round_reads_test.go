package journeys

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestRoundPageReadsOnce: the call page counts the rounds waiting for the
// person in the same read as the call, and the inbox in the same read as
// its lists (the navigation's number is right on both as rounds come and
// go), and a session found on both instances ends on
// the other at its next request when it is signed out on one, even for a
// copied cookie: nothing may remember a session past its end.
func TestRoundPageReadsOnce(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)
	c.login(a.URL, "admin", adminPassword)
	first := c.startCall(a.URL, "confirm_delete", `{"path":"/a"}`)
	second := c.startCall(a.URL, "confirm_delete", `{"path":"/b"}`)
	c.waitFor(a.URL, first.ID, 10*time.Second, roundIs(1))
	c.waitFor(a.URL, second.ID, 10*time.Second, roundIs(1))

	var countOn func(url string) string
	count := func(base string) string {
		t.Helper()
		return countOn(base + "/calls/" + first.ID)
	}
	countOn = func(url string) string {
		t.Helper()
		status, page := c.do("GET", url, "", "")
		if status != http.StatusOK {
			t.Fatalf("%s: %d", url, status)
		}
		const marker = `data-testid="inbox-count">`
		i := strings.Index(string(page), marker)
		if i < 0 {
			return ""
		}
		rest := string(page)[i+len(marker):]
		return rest[:strings.Index(rest, "<")]
	}
	if got := count(b.URL); got != "2" {
		t.Errorf("call page count with two rounds waiting: %q, want 2", got)
	}
	if got := countOn(a.URL + "/inbox"); got != "2" {
		t.Errorf("inbox count with two rounds waiting: %q, want 2", got)
	}
	if status, body := c.answer(b.URL, second.ID, 1, `{"confirm":{"action":"decline"}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	if got := count(a.URL); got != "1" {
		t.Errorf("call page count after one was answered: %q, want 1", got)
	}
	if got := countOn(b.URL + "/inbox"); got != "1" {
		t.Errorf("inbox count after one was answered: %q, want 1", got)
	}

	// The session was found on both instances; signing out on one ends it
	// on the other too.
	pool := adminPool(t, db)
	var before int64
	if err := pool.QueryRow(context.Background(), `select count(*) from sessions`).Scan(&before); err != nil || before != 1 {
		t.Fatalf("sessions: %d %v", before, err)
	}
	// A copied cookie: the browser forgets it at sign-out, a thief would not.
	base, _ := url.Parse(b.URL)
	cookies := c.jar.Cookies(base)
	status, _ := c.post(a.URL+"/logout", url.Values{})
	if status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", status)
	}
	c.jar.SetCookies(base, cookies)
	if status, _ := c.do("GET", b.URL+"/calls/"+first.ID, "", ""); status != http.StatusSeeOther {
		t.Errorf("the other instance served the ended session: %d, want a redirect to sign in", status)
	}
}
