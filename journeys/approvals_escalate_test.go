package journeys

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// escalatedCall is a call as the API shows it, with what its approval's
// escalation and hand-ons did.
type escalatedCall struct {
	Status   string `json:"status"`
	Approval *struct {
		State       string   `json:"state"`
		Needs       int      `json:"needs"`
		Asked       []string `json:"asked"`
		EscalatedTo string   `json:"escalatedTo"`
		HandedOn    []struct {
			From, To, By string
		} `json:"handedOn"`
	} `json:"approval"`
}

func (w *approvalWorld) escalated(in *instance, person, id string) escalatedCall {
	w.t.Helper()
	status, body := w.people[person].do("GET", in.URL+"/api/v1/calls/"+id, "", "")
	var c escalatedCall
	if status != http.StatusOK || json.Unmarshal(body, &c) != nil || c.Approval == nil {
		w.t.Fatalf("GET call %s as %s: %d %s", id, person, status, body)
	}
	return c
}

// addPerson adds an account with an API token and an address.
func (w *approvalWorld) addPerson(name string) {
	w.t.Helper()
	cli(w.t, w.db, "a long password\n", "user", "add", name)
	cli(w.t, w.db, "", "user", "email", name, name+"@example.com")
	jar, _ := cookiejar.New(nil)
	w.people[name] = &client{t: w.t, token: newToken(w.t, w.db, name), jar: jar}
}

// TestApprovalEscalatesToATeam: an approval fay alone was asked, which
// nobody decided by the server's escalation time (2 seconds here), goes
// also to team leads (kim, and ann, who started the call and is not
// added): kim is mailed, the call's webhook gets round.escalated with the
// call, the audit log says approval.escalated, the needs stay 1, and kim
// approving on the other instance runs the tool.
func TestApprovalEscalatesToATeam(t *testing.T) {
	t.Parallel()
	mb := newMailbox(t)
	var mu sync.Mutex
	var events []json.RawMessage
	hook := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		events = append(events, b)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	w := newApprovalWorldWith(t, `[{"tools": ["transfer"], "ask": "fay"}]`, map[string]string{"SMTP_URL": mb.URL,
		"MAIL_FROM": "rounds@example.com", "WEBHOOK_ALLOW_PRIVATE": "true"})
	w.addPerson("kim")
	cli(t, w.db, "", "user", "email", "ann", "ann@example.com")
	cli(t, w.db, "", "team", "add", "leads")
	cli(t, w.db, "", "team", "member", "add", "leads", "kim")
	cli(t, w.db, "", "team", "member", "add", "leads", "ann")
	const after = 2 * time.Second
	w.sql(`update servers set escalate_after = '2 seconds', escalate_to = 'team:leads' where name = 'bank'`)

	started := time.Now()
	status, body := w.people["ann"].do("POST", w.a.URL+"/api/v1/calls", "application/json",
		`{"server": "bank", "tool": "transfer", "arguments": {"amount": 40, "to": "bob"}, "webhook_url": "`+hook.URL+`"}`)
	var c approvalCall
	if status != http.StatusCreated || json.Unmarshal(body, &c) != nil || c.Status != "approval_required" {
		t.Fatalf("starting the transfer: %d %s", status, body)
	}
	if got := w.escalated(w.a, "ann", c.ID).Approval.Asked; !slices.Equal(got, []string{"fay"}) {
		t.Fatalf("asked before the escalation: %v", got)
	}
	var esc escalatedCall
	eventually(t, 30*time.Second, func() error {
		esc = w.escalated(w.b, "ann", c.ID)
		if esc.Approval.EscalatedTo == "" {
			return fmt.Errorf("not escalated yet: asked %v", esc.Approval.Asked)
		}
		return nil
	})
	if waited := time.Since(started); waited < after {
		t.Errorf("escalated after %v, before its escalation time (%v)", waited, after)
	}
	if a := esc.Approval; a.EscalatedTo != "team:leads" || !slices.Equal(a.Asked, []string{"fay", "kim"}) ||
		a.Needs != 1 || a.State != "waiting" || esc.Status != "approval_required" {
		t.Fatalf("after the escalation: %+v (status %s)", a, esc.Status)
	}
	m := mb.waitMail(t, "kim@example.com", "Rounds asks for your approval: transfer on bank", 1, 20*time.Second)[0]
	if !strings.Contains(m.Body, "/calls/"+c.ID) || !strings.Contains(m.Body, "Started by: ann") {
		t.Errorf("kim's mail:\n%s", m.Body)
	}
	eventually(t, 20*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			var ev struct {
				Type string        `json:"type"`
				Call escalatedCall `json:"call"`
			}
			if json.Unmarshal(e, &ev) == nil && ev.Type == "round.escalated" && ev.Call.Approval != nil &&
				slices.Contains(ev.Call.Approval.Asked, "kim") {
				return nil
			}
		}
		return fmt.Errorf("no round.escalated event with kim asked among %d events", len(events))
	})
	var n int
	var detail string
	queryRow(t, w.db, `select count(*), max(detail::text) from audit_log where target = $1 and action = 'approval.escalated'
		and actor = 'system'`, []any{c.ID}, &n, &detail)
	if n != 1 || !strings.Contains(detail, `"to": "team:leads"`) || !strings.Contains(detail, `"kim"`) {
		t.Errorf("audit of the escalation: %d entries, %s", n, detail)
	}

	if status, body := w.decide(w.b, "kim", c.ID, `{"decision": "approve"}`); status != http.StatusOK {
		t.Fatalf("kim approving: %d %s", status, body)
	}
	eventually(t, 30*time.Second, func() error {
		if s := w.call(w.a, "ann", c.ID).Status; s != "complete" {
			return fmt.Errorf("the call is %s", s)
		}
		return nil
	})
	if got := w.bank.transfers(); len(got) != 1 {
		t.Errorf("the bank got %d transfers: %v", len(got), got)
	}
	if got := mb.to("ann@example.com"); len(got) != 0 {
		t.Errorf("ann, the caller, got %d mails about her own approval", len(got))
	}
}

// TestAdminHandsOnApproval: an admin hands an approval on, on the other
// instance, from fay, asked and undecided, to kim; kim is mailed and her
// approval counts; fay is refused afterwards. A person not an admin is
// refused with a sentence; handing on from gus, who decided, is 409; to
// the caller or to someone unknown, 422. The call's page shows who handed
// it on, from whom and to whom.
func TestAdminHandsOnApproval(t *testing.T) {
	t.Parallel()
	mb := newMailbox(t)
	w := newApprovalWorldWith(t, `[{"tools": ["transfer"], "ask": ["fay", "gus"], "needs": 2}]`,
		map[string]string{"SMTP_URL": mb.URL, "MAIL_FROM": "rounds@example.com"})
	w.addPerson("kim")
	jar, _ := cookiejar.New(nil)
	w.people["admin"] = &client{t: t, token: newToken(t, w.db, "admin"), jar: jar}
	c := w.start(`{"amount": 40, "to": "bob"}`)
	if status, body := w.decide(w.a, "gus", c.ID, `{"decision": "approve"}`); status != http.StatusOK {
		t.Fatalf("gus approving: %d %s", status, body)
	}
	assign := func(in *instance, person, body string) (int, string) {
		status, out := w.people[person].do("POST", in.URL+"/api/v1/calls/"+c.ID+"/approval/assign", "application/json", body)
		return status, string(out)
	}
	if status, body := assign(w.b, "bob", `{"from": "fay", "to": "kim"}`); status != http.StatusForbidden ||
		!strings.Contains(body, "Only an admin may hand an approval on") {
		t.Errorf("bob, not an admin, handing on: %d %s", status, body)
	}
	if status, body := assign(w.b, "admin", `{"from": "gus", "to": "kim"}`); status != http.StatusConflict {
		t.Errorf("handing on from gus, who decided: %d %s", status, body)
	}
	for _, to := range []string{"ann", "nobody", "gus"} {
		if status, body := assign(w.b, "admin", `{"from": "fay", "to": "`+to+`"}`); status != http.StatusUnprocessableEntity {
			t.Errorf("handing on to %s: %d %s", to, status, body)
		}
	}
	if status, body := assign(w.b, "admin", `{"from": "fay", "to": "kim"}`); status != http.StatusOK {
		t.Fatalf("the admin handing on from fay to kim: %d %s", status, body)
	}
	after := w.escalated(w.a, "ann", c.ID)
	if a := after.Approval; !slices.Equal(a.Asked, []string{"gus", "kim"}) || len(a.HandedOn) != 1 ||
		a.HandedOn[0].From != "fay" || a.HandedOn[0].To != "kim" || a.HandedOn[0].By != "admin" {
		t.Fatalf("after the hand-on: %+v", a)
	}
	mb.waitMail(t, "kim@example.com", "Rounds asks for your approval: transfer on bank", 1, 20*time.Second)
	var detail string
	queryRow(t, w.db, `select detail::text from audit_log where target = $1 and action = 'approval.handed_on' and actor = 'admin'`,
		[]any{c.ID}, &detail)
	if !strings.Contains(detail, `"from": "fay"`) || !strings.Contains(detail, `"to": "kim"`) {
		t.Errorf("audit of the hand-on: %s", detail)
	}

	w.people["admin"].login(w.a.URL, "admin", adminPassword)
	page := w.people["admin"].page(w.a.URL + "/calls/" + c.ID)
	if got := page.Find(`[data-testid="approval-handon-entry"]`).Text(); !strings.Contains(got, "Handed on from fay to kim by admin") {
		t.Errorf("the call page's history: %q", got)
	}
	if page.Find(`[data-testid="approval-handon"]`).Length() != 1 {
		t.Error("the call page offers the admin no form to hand the approval on")
	}

	if status, body := w.decide(w.a, "fay", c.ID, `{"decision": "approve"}`); status != http.StatusForbidden {
		t.Errorf("fay approving after the hand-on: %d %s", status, body)
	}
	if status, body := w.decide(w.b, "kim", c.ID, `{"decision": "approve"}`); status != http.StatusOK {
		t.Fatalf("kim approving: %d %s", status, body)
	}
	eventually(t, 30*time.Second, func() error {
		if s := w.call(w.a, "ann", c.ID).Status; s != "complete" {
			return fmt.Errorf("the call is %s", s)
		}
		return nil
	})
	if got := w.bank.transfers(); len(got) != 1 {
		t.Errorf("the bank got %d transfers: %v", len(got), got)
	}
	if status, body := assign(w.a, "admin", `{"from": "gus", "to": "hal"}`); status != http.StatusConflict {
		t.Errorf("handing on an approval that ended: %d %s", status, body)
	}
	form := url.Values{"from": {"gus"}, "to": {"hal"}}
	if status, _ := w.people["admin"].post(w.a.URL+"/calls/"+c.ID+"/approval/assign", form); status != http.StatusConflict {
		t.Errorf("the page's hand-on after the end: %d", status)
	}
}
