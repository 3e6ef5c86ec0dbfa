package journeys

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// mailLinkRE finds a decision link and its label in a mail: "    Yes: https://…/decide/TOKEN".
var mailLinkRE = regexp.MustCompile(`(?m)^ {4}([^\r\n]+): https://rounds\.example(/decide/[A-Za-z0-9_-]+)\r?$`)

// mailLinks are the decision links of a mail, by label, as paths.
func mailLinks(t *testing.T, m sentMail) (labels []string, paths map[string]string) {
	t.Helper()
	paths = map[string]string{}
	for _, match := range mailLinkRE.FindAllStringSubmatch(m.Body, -1) {
		labels = append(labels, match[1])
		paths[match[1]] = match[2]
	}
	return labels, paths
}

// anonymous is a client with a cookie jar and nobody signed in: a mail
// scanner, a preview, or a person before signing in.
func anonymous(t *testing.T) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, jar: jar}
}

// signedInPages is a client signed in to base as name, with the pages' CSRF token.
func signedInPages(t *testing.T, base, name, password string) *client {
	c := anonymous(t)
	c.login(base, name, password)
	return c
}

// decidePage reads a decision page, and the CSRF token its form carries.
func decidePage(t *testing.T, c *client, link string, want int) (*goquery.Document, string) {
	t.Helper()
	status, body := c.do("GET", link, "", "")
	if status != want {
		t.Fatalf("GET %s: %d, want %d\n%s", link, status, want, body)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc, csrfFrom(body)
}

func roundAnsweredBy(t *testing.T, db, callID string, seq int) string {
	t.Helper()
	var by *string
	queryRow(t, db, `select answered_by from rounds where call_id = $1 and seq = $2`, []any{callID, seq}, &by)
	if by == nil {
		return ""
	}
	return *by
}

// TestMailDecisionSignIn follows a yes/no round's mail on two instances:
// the mail has one link per answer and nothing of the server's state; a
// scanner fetching every link three times (GET and HEAD), and the person
// opening one three times, answer nothing; someone signed in as another
// person is refused, and so is an altered link; the person's POST on the
// page answers, the tool gets the answer; the mail's other link then says
// who answered, and when.
func TestMailDecisionSignIn(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)})
	logs := &logSink{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	a := startInstance(t, db, env, logs)
	b := startInstance(t, db, env, logs)
	addPeople(t, db)
	admin := newClient(t, db)
	status, body := admin.do("POST", a.URL+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"confirm_delete","arguments":{"path":"/tmp/report.txt"},"assignee":"ada"}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var call apiCall
	_ = json.Unmarshal(body, &call)
	admin.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))
	m := mb.waitMail(t, "ada@example.com", "demo asks you", 1, 10*time.Second)[0]
	labels, links := mailLinks(t, m)
	if strings.Join(labels, "|") != "Yes|No" || links["Yes"] == links["No"] {
		t.Fatalf("the mail's links are %q, want Yes and No, each its own:\n%s", labels, m.Body)
	}
	for _, s := range requestStates(t, db) {
		if strings.Contains(m.Body, s) {
			t.Fatalf("the mail carries the requestState")
		}
	}

	// A scanner follows every link three times, on both instances: it is
	// sent to sign in, and nothing is answered.
	scanner := anonymous(t)
	for _, base := range []string{a.URL, b.URL} {
		for _, l := range links {
			for range 3 {
				if status, _ := scanner.do("GET", base+l, "", ""); status != http.StatusSeeOther {
					t.Errorf("a scanner's GET of %s: %d, want a redirect to sign in", l, status)
				}
				if status, _ := scanner.do("HEAD", base+l, "", ""); status >= 200 && status < 300 {
					t.Errorf("a scanner's HEAD of %s: %d", l, status)
				}
			}
		}
	}
	// Signing in from the link comes back to it.
	status, _ = scanner.do("GET", a.URL+links["Yes"], "", "")
	_, login := scanner.do("GET", a.URL+"/login?next="+url.QueryEscape(links["Yes"]), "", "")
	form := url.Values{"username": {"ada"}, "password": {"a long password"}, "csrf_token": {csrfFrom(login)}, "next": {links["Yes"]}}
	req, _ := http.NewRequest("POST", a.URL+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{Jar: scanner.jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Location"); status != http.StatusSeeOther || got != links["Yes"] {
		t.Errorf("signing in from the link sends ada to %q, want back to the link", got)
	}
	ada := scanner
	// ada opens the page three times: it says what it will answer, and
	// answers nothing.
	var csrf string
	for _, base := range []string{a.URL, b.URL, a.URL} {
		var page *goquery.Document
		page, csrf = decidePage(t, ada, base+links["Yes"], http.StatusOK)
		if got := page.Find(`[data-testid="decide-question"]`).Text(); got != "Delete /tmp/report.txt? This cannot be undone." {
			t.Errorf("the page asks %q", got)
		}
		if got := page.Find(`[data-testid="decide-choice"]`).Text(); got != "Yes" {
			t.Errorf("the page says it answers %q", got)
		}
	}
	if got := admin.waitFor(a.URL, call.ID, time.Second, func(apiCall) bool { return true }); !roundIs(1)(got) {
		t.Fatalf("after every GET the call is %+v, want round 1 still waiting", got)
	}

	// Someone else signed in is refused, on the page and its POST.
	bob := signedInPages(t, b.URL, "bob", "a long password")
	if page, _ := decidePage(t, bob, b.URL+links["Yes"], http.StatusForbidden); !strings.Contains(page.Text(), "This link was mailed to ada") {
		t.Errorf("bob is refused without saying why: %s", page.Text())
	}
	if status, _ := bob.post(b.URL+links["Yes"], url.Values{}); status != http.StatusForbidden {
		t.Errorf("bob posts ada's link: %d", status)
	}
	// An altered link is refused, and answers nothing.
	yes := links["Yes"]
	altered := yes[:len(yes)-3] + map[bool]string{true: "B", false: "A"}[yes[len(yes)-3] == 'A'] + yes[len(yes)-2:]
	if page, _ := decidePage(t, ada, a.URL+altered, http.StatusNotFound); !strings.Contains(page.Text(), "not one Rounds made") {
		t.Errorf("an altered link: %s", page.Text())
	}
	ada.csrf = csrf
	if status, _ := ada.post(a.URL+altered, url.Values{}); status != http.StatusNotFound {
		t.Errorf("posting an altered link: %d", status)
	}

	// The POST answers, on the other instance, and the tool gets it.
	status, body = ada.post(b.URL+links["Yes"], url.Values{})
	if status != http.StatusOK || !bytes.Contains(body, []byte(`data-testid="decide-sent"`)) {
		t.Fatalf("ada answers Yes: %d %s", status, body)
	}
	done := admin.waitFor(a.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Deleted /tmp/report.txt" {
		t.Fatalf("the call ends %+v", done)
	}
	if by := roundAnsweredBy(t, db, call.ID, 1); by != "ada" {
		t.Errorf("the round was answered by %q", by)
	}
	var marked bool
	queryRow(t, db, `select coalesce((detail->>'mail_link')::boolean, false) from audit_log where action = 'round.answered' and target = $1 and actor = 'ada'`,
		[]any{call.ID}, &marked)
	if !marked {
		t.Errorf("the answer's audit entry does not say it was made with a mail's link")
	}
	// Used again, the links answer nothing and say who answered, and when.
	for _, l := range []string{links["Yes"], links["No"]} {
		status, body := ada.post(a.URL+l, url.Values{})
		if status != http.StatusConflict || !regexp.MustCompile(`Already answered by ada at \d{4}-\d\d-\d\d \d\d:\d\d`).Match(body) {
			t.Errorf("posting %s again: %d\n%s", l, status, body)
		}
		page, _ := decidePage(t, ada, b.URL+l, http.StatusOK)
		if got := page.Find(`[data-testid="decide-gone"]`).Text(); !strings.HasPrefix(strings.TrimSpace(got), "Already answered by ada at ") {
			t.Errorf("opening %s again says %q", l, got)
		}
		if page.Find(`[data-testid="decide-form"]`).Length() != 0 {
			t.Errorf("the page of a used link offers its button")
		}
	}
}

// TestMailDecisionByLink: with MAIL_DECISIONS=link, a single choice
// round's mail answers without signing in: fetched three times, nothing;
// then the page's POST answers as the person mailed.
func TestMailDecisionByLink(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "MAIL_DECISIONS": "link"})
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	addPeople(t, db)
	admin := newClient(t, db)
	status, body := admin.do("POST", a.URL+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"book_flight","arguments":{},"assignee":"ada"}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var call apiCall
	_ = json.Unmarshal(body, &call)
	admin.waitFor(a.URL, call.ID, 10*time.Second, roundIs(1))
	first := mb.waitMail(t, "ada@example.com", "demo asks you", 1, 10*time.Second)[0]
	if labels, _ := mailLinks(t, first); len(labels) != 0 {
		t.Errorf("a round of two questions is mailed with links %q", labels)
	}
	ada := person(t, db, "ada")
	if status, body := ada.answer(b.URL, call.ID, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("ada answers round 1: %d %s", status, body)
	}
	admin.waitFor(a.URL, call.ID, 10*time.Second, roundIs(2))
	m := mb.waitMail(t, "ada@example.com", "demo asks you", 2, 10*time.Second)[1]
	labels, links := mailLinks(t, m)
	if strings.Join(labels, "|") != "Economy|Premium economy|Business" {
		t.Fatalf("the mail's links are %q:\n%s", labels, m.Body)
	}
	anyone := anonymous(t)
	var csrf string
	for _, base := range []string{a.URL, b.URL, a.URL} {
		var page *goquery.Document
		page, csrf = decidePage(t, anyone, base+links["Business"], http.StatusOK)
		if got := page.Find(`[data-testid="decide-choice"]`).Text(); got != "Business" {
			t.Errorf("the page says it answers %q", got)
		}
	}
	if got := admin.waitFor(a.URL, call.ID, time.Second, func(apiCall) bool { return true }); !roundIs(2)(got) {
		t.Fatalf("after three GETs the call is %+v", got)
	}
	// Without the page's CSRF token, a POST answers nothing.
	if status, _ := anyone.do("POST", b.URL+links["Business"], "application/x-www-form-urlencoded", ""); status != http.StatusForbidden {
		t.Errorf("a POST without the form's token: %d", status)
	}
	anyone.csrf = csrf
	status, body = anyone.post(b.URL+links["Business"], url.Values{})
	if status != http.StatusOK || !bytes.Contains(body, []byte(`data-testid="decide-sent"`)) {
		t.Fatalf("the link's POST: %d %s", status, body)
	}
	done := admin.waitFor(a.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" || !strings.Contains(resultText(t, done.Result), "Business class") {
		t.Fatalf("the call ends %+v", done)
	}
	if by := roundAnsweredBy(t, db, call.ID, 2); by != "ada" {
		t.Errorf("the round was answered by %q, want ada, whom the link was mailed to", by)
	}
	if status, _ := anyone.post(a.URL+links["Economy"], url.Values{}); status != http.StatusConflict {
		t.Errorf("the mail's other link, after: %d", status)
	}
}
