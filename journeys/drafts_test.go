package journeys

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jackc/pgx/v5"
)

// hxPost posts a form the way htmx does: HX-Request, and the CSRF token in
// a header rather than in the form.
func (c *client) hxPost(url string, form url.Values, token string) int {
	c.t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	if token != "" {
		req.Header.Set("X-CSRF-Token", token)
	}
	noRedirect := &http.Client{Jar: c.jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// page gets a page and parses it.
func (c *client) page(url string) *goquery.Document {
	c.t.Helper()
	status, body := c.do("GET", url, "", "")
	if status != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", url, status, body)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	return doc
}

// TestDraftsFollowThePerson saves what a person typed into a round on one
// instance, with the "Save draft" button and then as htmx does on change,
// and finds it on the other instance, signed in from another device. Once
// the round is answered the draft is gone and no new one is taken.
func TestDraftsFollowThePerson(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)

	laptop := newClient(t, db)
	laptop.login(a.URL, "admin", adminPassword)
	call := laptop.startCall(a.URL, "create_task", `{}`)
	laptop.waitFor(a.URL, call.ID, 10*time.Second, roundIs(1))
	round := "/calls/" + call.ID + "/rounds/1"

	// A half-typed form, with a value that would not pass the check.
	status, _ := laptop.post(a.URL+round+"/draft", url.Values{
		"q0$action": {"accept"}, "q0.title": {"Wri"}, "q0.points": {"1.5"},
		"q0.tags$present": {"1"}, "q0.tags": {"bug", "docs"},
	})
	if status != http.StatusSeeOther {
		t.Fatalf("save draft: %d, want 303 back to the call", status)
	}

	phone := newClient(t, db)
	phone.login(b.URL, "admin", adminPassword)
	doc := phone.page(b.URL + "/calls/" + call.ID)
	for name, want := range map[string]string{"q0.title": "Wri", "q0.points": "1.5"} {
		if got := doc.Find(`input[name="`+name+`"]`).AttrOr("value", ""); got != want {
			t.Errorf("on B, %s = %q, want the draft's %q", name, got, want)
		}
	}
	var tags []string
	doc.Find(`input[name="q0.tags"][checked]`).Each(func(_ int, s *goquery.Selection) { tags = append(tags, s.AttrOr("value", "")) })
	if strings.Join(tags, ",") != "bug,docs" {
		t.Errorf("on B, tags ticked = %q, want the draft's bug,docs (not the default, feature)", tags)
	}
	if doc.Find(`[data-testid="error-summary"], [aria-invalid]`).Length() != 0 {
		t.Error("a draft is shown with errors; it was never sent")
	}
	if got := doc.Find(`[data-testid="draft-status"]`).Text(); !strings.Contains(got, "Draft saved") {
		t.Errorf("draft status = %q, want it to say when the draft was saved", got)
	}

	// htmx, on B, as the phone types: 204, and A shows it.
	if status := phone.hxPost(b.URL+round+"/draft", url.Values{"q0$action": {"decline"}, "q0.title": {"Write the docs"}}, phone.csrf); status != http.StatusNoContent {
		t.Fatalf("htmx draft: %d, want 204", status)
	}
	doc = laptop.page(a.URL + "/calls/" + call.ID)
	if got := doc.Find(`input[name="q0.title"]`).AttrOr("value", ""); got != "Write the docs" {
		t.Errorf("on A, title = %q, want the phone's draft", got)
	}
	// The round has one question, answered with a button each: a draft
	// keeps what was typed, not a choice the page would show.
	// Not without the CSRF token.
	if status := phone.hxPost(b.URL+round+"/draft", url.Values{"q0.title": {"forged"}}, ""); status != http.StatusForbidden {
		t.Errorf("draft without a CSRF token: %d, want 403", status)
	}
	// Not for someone else's call.
	addUser(t, db, "mallory", "mallory's long password")
	other := newClient(t, db)
	other.login(b.URL, "mallory", "mallory's long password")
	if status, _ := other.post(b.URL+round+"/draft", url.Values{"q0.title": {"mine now"}}); status != http.StatusNotFound {
		t.Errorf("someone else's draft: %d, want 404", status)
	}
	if got := laptop.page(a.URL+"/calls/"+call.ID).Find(`input[name="q0.title"]`).AttrOr("value", ""); got != "Write the docs" {
		t.Errorf("title = %q after refused drafts, want it unchanged", got)
	}

	// Answered: the draft goes, and no new one is taken.
	status, body := laptop.post(a.URL+round, url.Values{"q0$action": {"accept"}, "q0.title": {"Write the docs"}, "q0.priority": {"low"}})
	if status != http.StatusSeeOther {
		t.Fatalf("answer: %d %s", status, body)
	}
	if status, _ := laptop.post(a.URL+round+"/draft", url.Values{"q0.title": {"too late"}}); status != http.StatusConflict {
		t.Errorf("draft of an answered round: %d, want 409", status)
	}
	if status := phone.hxPost(b.URL+round+"/draft", url.Values{"q0.title": {"too late"}}, phone.csrf); status != http.StatusConflict {
		t.Errorf("htmx draft of an answered round: %d, want 409", status)
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `select count(*) from drafts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d drafts left after the round was answered", n)
	}
}
