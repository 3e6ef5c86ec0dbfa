package journeys

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMailDecisionApproval follows approval mails' links on two
// instances: each person asked gets Approve and Decline; a scanner's and
// the person's GETs decide nothing; a decline's reason typed on the page
// ends the call with it; the mail's other link then says who decided, and
// when; on another call, Approve sends the call to the server.
func TestMailDecisionApproval(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)})
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	addPeople(t, db)
	var id int64
	queryRow(t, db, `update servers set approvals = '[{"tools":["confirm_delete"],"ask":"team:approvers"}]' where name = 'demo' returning id`, nil, &id)
	admin := newClient(t, db)
	start := func(path string) string {
		status, body := admin.do("POST", a.URL+"/api/v1/calls", "application/json",
			`{"server":"demo","tool":"confirm_delete","arguments":{"path":"`+path+`"}}`)
		if status != http.StatusCreated {
			t.Fatalf("start: %d %s", status, body)
		}
		var call apiCall
		_ = json.Unmarshal(body, &call)
		return call.ID
	}
	waiting := func(c apiCall) bool { return c.Status == "approval_required" }

	first := start("/tmp/one.txt")
	admin.waitFor(b.URL, first, 10*time.Second, waiting)
	m := mb.waitMail(t, "ada@example.com", "approval", 1, 10*time.Second)[0]
	labels, links := mailLinks(t, m)
	if strings.Join(labels, "|") != "Approve|Decline" {
		t.Fatalf("the approval mail's links are %q:\n%s", labels, m.Body)
	}
	scanner := anonymous(t)
	for _, base := range []string{a.URL, b.URL} {
		for _, l := range links {
			for range 3 {
				scanner.do("GET", base+l, "", "")
			}
		}
	}
	ada := signedInPages(t, a.URL, "ada", "a long password")
	var csrf string
	for _, base := range []string{a.URL, b.URL, a.URL} {
		page, token := decidePage(t, ada, base+links["Decline"], http.StatusOK)
		csrf = token
		if got := page.Find(`[data-testid="decide-arguments"]`).Text(); !strings.Contains(got, `"path": "/tmp/one.txt"`) {
			t.Errorf("the page shows the arguments %q", got)
		}
		if page.Find(`[data-testid="decide-reason"]`).Length() != 1 {
			t.Errorf("the decline page asks no reason")
		}
	}
	if got := admin.waitFor(a.URL, first, time.Second, func(apiCall) bool { return true }); !waiting(got) {
		t.Fatalf("after every GET the call is %+v, want it waiting for approval", got)
	}
	ada.csrf = csrf
	status, body := ada.post(b.URL+links["Decline"], url.Values{"reason": {"Not on a Friday."}})
	if status != http.StatusOK || !strings.Contains(string(body), `data-testid="decide-sent"`) {
		t.Fatalf("ada declines: %d %s", status, body)
	}
	done := admin.waitFor(a.URL, first, 10*time.Second, isDone)
	if done.Status != "failed" || done.Error == nil || done.Error.Message != "Declined by ada: Not on a Friday." {
		t.Fatalf("the declined call: %+v", done)
	}
	var marked bool
	queryRow(t, db, `select coalesce((detail->>'mail_link')::boolean, false) from audit_log where action = 'approval.declined' and target = $1 and actor = 'ada'`,
		[]any{first}, &marked)
	if !marked {
		t.Errorf("the decline's audit entry does not say it was made with a mail's link")
	}
	status, body = ada.post(a.URL+links["Approve"], url.Values{})
	if status != http.StatusConflict || !regexp.MustCompile(`Already decided by ada at \d{4}-\d\d-\d\d \d\d:\d\d`).Match(body) {
		t.Errorf("the mail's Approve after the decline: %d\n%s", status, body)
	}

	second := start("/tmp/two.txt")
	admin.waitFor(b.URL, second, 10*time.Second, waiting)
	m = mb.waitMail(t, "bob@example.com", "approval", 2, 10*time.Second)[1]
	_, links = mailLinks(t, m)
	bob := signedInPages(t, b.URL, "bob", "a long password")
	_, bob.csrf = decidePage(t, bob, b.URL+links["Approve"], http.StatusOK)
	if status, body := bob.post(a.URL+links["Approve"], url.Values{}); status != http.StatusOK {
		t.Fatalf("bob approves: %d %s", status, body)
	}
	// Approved, the call reaches the server, whose tool asks its own question.
	admin.waitFor(b.URL, second, 10*time.Second, roundIs(1))
}
