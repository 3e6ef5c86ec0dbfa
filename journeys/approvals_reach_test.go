package journeys

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestApprovalReachesPeople: an approval reaches the people asked as a
// round does, as Rounds' own question: a mail to each one with an address
// (not to the caller), the call's webhook an approval.waiting event with
// the approval, and the audit log each decision, with for whom.
func TestApprovalReachesPeople(t *testing.T) {
	t.Parallel()
	mb := newMailbox(t)
	var mu sync.Mutex
	var events []json.RawMessage
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		events = append(events, b)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	w := newApprovalWorldWith(t, twoOfFinance, map[string]string{"SMTP_URL": mb.URL, "MAIL_FROM": "rounds@example.com",
		"WEBHOOK_ALLOW_PRIVATE": "true"})
	for _, name := range []string{"ann", "fay", "gus"} {
		cli(t, w.db, "", "user", "email", name, name+"@example.com")
	}
	status, body := w.people["ann"].do("POST", w.a.URL+"/api/v1/calls", "application/json",
		`{"server": "bank", "tool": "transfer", "arguments": {"amount": 4000, "to": "bob"}, "webhook_url": "`+hook.URL+`"}`)
	var c approvalCall
	if status != http.StatusCreated || json.Unmarshal(body, &c) != nil || c.Status != "approval_required" {
		t.Fatalf("starting the transfer: %d %s", status, body)
	}
	for _, who := range []string{"fay", "gus"} {
		m := mb.waitMail(t, who+"@example.com", "Rounds asks for your approval: transfer on bank", 1, 20*time.Second)[0]
		if !strings.Contains(m.Body, "the server has not seen this call") || !strings.Contains(m.Body, "/calls/"+c.ID) ||
			!strings.Contains(m.Body, `"amount": 4000`) || !strings.Contains(m.Body, "Started by: ann") {
			t.Errorf("%s's mail:\n%s", who, m.Body)
		}
	}
	eventually(t, 20*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			var ev struct {
				Type string       `json:"type"`
				Call approvalCall `json:"call"`
			}
			if json.Unmarshal(e, &ev) == nil && ev.Type == "approval.waiting" && ev.Call.Status == "approval_required" &&
				ev.Call.Approval != nil && ev.Call.Approval.Needs == 2 && len(ev.Call.Approval.Asked) == 5 {
				return nil
			}
		}
		return errorsOf(events)
	})
	if status, body := w.decide(w.b, "fay", c.ID, `{"decision": "decline", "reason": "Not this quarter."}`); status != http.StatusOK {
		t.Fatalf("fay declining: %d %s", status, body)
	}
	var action, detail string
	queryRow(t, w.db, `select action, detail::text from audit_log where target = $1 and actor = 'fay'`, []any{c.ID}, &action, &detail)
	if action != "approval.declined" || !strings.Contains(detail, `"for": "fay"`) || !strings.Contains(detail, "Not this quarter.") {
		t.Errorf("the audit entry of the decline: %s %s", action, detail)
	}
	if n := len(mb.to("ann@example.com")); n != 0 {
		t.Errorf("the caller got %d mails about her own approval", n)
	}
}

// errorsOf says which webhook events came, for a failed wait.
func errorsOf(events []json.RawMessage) error {
	var types []string
	for _, e := range events {
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(e, &ev)
		types = append(types, ev.Type)
	}
	return fmt.Errorf("the webhook got no approval.waiting event with the approval; it got %s", strings.Join(types, ", "))
}
