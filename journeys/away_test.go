package journeys

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/mcp-rounds/rounds/store"
)

// signedIn is a client acting as name through the API and, signed in on
// base, through the pages.
func signedIn(t *testing.T, db, base, name string) *client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &client{t: t, token: newToken(t, db, name), jar: jar}
	c.login(base, name, "a long password")
	return c
}

// answeredCall is what the API says of who answered a call's latest round,
// and of a waiting round's hand-over.
type answeredCall struct {
	Status   string `json:"status"`
	Assignee string `json:"assignee"`
	Round    *struct {
		Seq      int             `json:"seq"`
		HandedOn *handedOnJSON   `json:"handedOn"`
		Raw      json.RawMessage `json:"inputRequests"`
	} `json:"round"`
	Answered *struct {
		Seq      int           `json:"seq"`
		By       string        `json:"by"`
		For      string        `json:"for"`
		HandedOn *handedOnJSON `json:"handedOn"`
	} `json:"answered"`
}

type handedOnJSON struct {
	From string `json:"from"`
	To   string `json:"to"`
	By   string `json:"by"`
}

func (c *client) answeredCall(base, id string) answeredCall {
	c.t.Helper()
	status, b := c.do("GET", base+"/api/v1/calls/"+id, "", "")
	var out answeredCall
	if status != http.StatusOK || json.Unmarshal(b, &out) != nil {
		c.t.Fatalf("GET call %s: %d %s", id, status, b)
	}
	return out
}

// inboxCalls lists the calls of the rounds in the signed-in person's inbox.
func (c *client) inboxCalls(base string) []string {
	c.t.Helper()
	var out []string
	c.page(base + "/inbox").Find(`[data-testid="inbox-item"] a.button`).Each(func(_ int, s *goquery.Selection) {
		href, _ := s.Attr("href")
		out = append(out, strings.TrimPrefix(href, "/calls/"))
	})
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// auditLines are the audit log's rows about target, oldest first, as
// "action by actor detail".
func auditLines(c *client, base, target string) []string {
	var trail []string
	c.page(base + "/admin/audit?target=" + target).Find(`tr[data-testid="audit-row"]`).Each(func(_ int, row *goquery.Selection) {
		cells := row.Find("td").Map(func(_ int, s *goquery.Selection) string { return strings.TrimSpace(s.Text()) })
		trail = append([]string{cells[2] + " by " + cells[1] + " " + cells[4]}, trail...)
	})
	return trail
}

// TestDelegationWhileAwayThenBack: ada, away with erin as her delegate,
// has her rounds reach erin (inbox, mail), who answers one on the other
// instance; the API, the webhook body, the audit log and the history say
// erin answered for ada. Back, ada's rounds are hers alone again.
func TestDelegationWhileAwayThenBack(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	rc := newReceiver(t)
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)})
	logs := &logSink{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	a := startInstance(t, db, env, logs)
	b := startInstance(t, db, env, logs)
	for _, name := range []string{"ada", "erin", "finn"} {
		cli(t, db, "a long password\n", "user", "add", "--email", name+"@example.com", name)
	}
	admin := newClient(t, db)
	admin.login(a.URL, "admin", adminPassword)
	rc.secret = admin.webhookSecret(b.URL)
	ada, erin := signedIn(t, db, a.URL, "ada"), signedIn(t, db, a.URL, "erin")

	start := func(webhook bool) string {
		t.Helper()
		body := `{"server":"demo","tool":"book_flight","arguments":{},"assignee":"ada"`
		if webhook {
			body += `,"webhook_url":"` + rc.URL + `"`
		}
		status, b := admin.do("POST", a.URL+"/api/v1/calls", "application/json", body+`}`)
		var call apiCall
		if status != http.StatusCreated || json.Unmarshal(b, &call) != nil {
			t.Fatalf("start: %d %s", status, b)
		}
		return call.ID
	}
	first := start(true)
	ada.waitFor(b.URL, first, 10*time.Second, roundIs(1))
	if status, body := ada.answer(b.URL, first, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("ada answers round 1: %d %s", status, body)
	}
	ada.waitFor(a.URL, first, 10*time.Second, roundIs(2))

	// Refusals say why in a sentence; then ada is away with erin.
	until := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct{ body, want string }{
		{`{"until":"` + until + `","delegate":"ada"}`, store.AwaySelfMessage},
		{`{"until":"2020-01-01T00:00:00Z","delegate":"erin"}`, store.AwayPastMessage},
		{`{"until":"` + until + `","delegate":"nobody"}`, store.AwayDelegateMessage},
	} {
		status, body := ada.do("PUT", a.URL+"/api/v1/me/away", "application/json", tc.body)
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), tc.want) {
			t.Errorf("PUT away %s: %d %s; want 422 saying %q", tc.body, status, body, tc.want)
		}
	}
	if status, body := ada.do("PUT", a.URL+"/api/v1/me/away", "application/json",
		`{"until":"`+until+`","delegate":"erin"}`); status != http.StatusOK {
		t.Fatalf("PUT away: %d %s", status, body)
	}
	second := start(false)
	ada.waitFor(a.URL, second, 10*time.Second, roundIs(1))
	// The round that came while ada is away is mailed to erin.
	mb.waitMail(t, "erin@example.com", "demo asks you", 1, 10*time.Second)

	inbox := erin.inboxCalls(a.URL)
	if !contains(inbox, first) || !contains(inbox, second) {
		t.Fatalf("erin's inbox lists %v, want ada's rounds of %s and %s", inbox, first, second)
	}
	if got := erin.page(a.URL + "/inbox").Find(`[data-testid="inbox-for"]`).First().Text(); !strings.Contains(got, "ada, who is away") {
		t.Errorf("erin's inbox says %q, want whom she answers for", got)
	}
	if status, _ := signedInAPI(t, db, "finn").answer(b.URL, first, 2, seatAnswers); status != http.StatusNotFound {
		t.Errorf("someone else answers ada's round: %d", status)
	}
	if status, body := erin.answer(b.URL, first, 2, seatAnswers); status != http.StatusAccepted {
		t.Fatalf("erin answers ada's round 2 on the other instance: %d %s", status, body)
	}
	done := admin.waitFor(a.URL, first, 10*time.Second, isDone)
	if done.Status != "complete" {
		t.Fatalf("call = %+v", done)
	}
	if got := admin.answeredCall(a.URL, first).Answered; got == nil || got.Seq != 2 || got.By != "erin" || got.For != "ada" {
		t.Errorf("the API's answered = %+v, want round 2 by erin for ada", got)
	}
	var finished *webhookEvent
	eventually(t, 30*time.Second, func() error {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, ev := range rc.events {
			if ev.Type == "call.finished" {
				finished = &ev
				return nil
			}
		}
		return errors.New("no call.finished event yet")
	})
	var body struct {
		Call answeredCall `json:"call"`
	}
	if err := json.Unmarshal(finished.Raw, &body); err != nil || body.Call.Answered == nil ||
		body.Call.Answered.By != "erin" || body.Call.Answered.For != "ada" {
		t.Errorf("the call.finished body says %s; want answered by erin for ada", finished.Raw)
	}
	page := admin.page(a.URL + "/calls/" + first)
	if by, by2 := page.Find(`[data-testid="answered-by"]`).Last().Text(), page.Find(`[data-testid="answered-for"]`).Text(); by != "erin" || by2 != "ada" {
		t.Errorf("the history says answered by %q for %q, want erin for ada", by, by2)
	}
	var answered []string
	for _, line := range auditLines(admin, a.URL, first) {
		if strings.HasPrefix(line, "round.answered") {
			answered = append(answered, line)
		}
	}
	if len(answered) != 2 || !strings.HasPrefix(answered[1], "round.answered by erin ") || !strings.Contains(answered[1], `"for": "ada"`) ||
		strings.Contains(answered[0], `"for"`) {
		t.Errorf("the audit log's answers = %q; want ada's own, then erin's for ada", answered)
	}

	// Back: the second round is ada's alone again.
	if status, body := ada.do("DELETE", a.URL+"/api/v1/me/away", "", ""); status != http.StatusNoContent {
		t.Fatalf("DELETE away: %d %s", status, body)
	}
	if inbox := erin.inboxCalls(b.URL); contains(inbox, second) {
		t.Errorf("erin's inbox still lists ada's round after she is back: %v", inbox)
	}
	if status, _ := erin.answer(b.URL, second, 1, tripAnswers); status != http.StatusNotFound {
		t.Errorf("erin answers ada's round after she is back: %d", status)
	}
	if !contains(ada.inboxCalls(b.URL), second) {
		t.Error("ada's inbox does not list her round once back")
	}
	if status, body := ada.answer(b.URL, second, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("ada answers her round once back: %d %s", status, body)
	}
}

// signedInAPI is a client acting as name through the API only.
func signedInAPI(t *testing.T, db, name string) *client {
	t.Helper()
	return &client{t: t, token: newToken(t, db, name)}
}
