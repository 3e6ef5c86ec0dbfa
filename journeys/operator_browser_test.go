package journeys

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/app"
)

// TestBrowserBulkEndAndSessions clicks, in headless Chromium, what an
// operator and a person do with the safety catches and sessions: on the
// admin call list, select two of three waiting calls, cancel them, confirm
// with a reason, see them ended (the third left waiting) and the reason in
// the audit log; on the account page, see the sessions listed, end another
// device's, then sign out everywhere. axe-core checks each page.
func TestBrowserBulkEndAndSessions(t *testing.T) {
	t.Parallel()
	chrome := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	api := newClient(t, db)

	t.Run("BulkEnd", func(t *testing.T) {
		t.Parallel()
		var ids []string
		for range 3 {
			call := api.startCall(inst.URL, "book_flight", "{}")
			api.waitFor(inst.URL, call.ID, 30*time.Second, roundIs(1))
			ids = append(ids, call.ID)
		}
		j := newJourneyFor(t, chrome, true, 8*time.Minute)
		j.emulate(1280, "UTC")
		j.signIn(inst.URL)
		j.do("open the admin call list", chromedp.Navigate(inst.URL+"/admin/calls"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="bulk-form"]`)))
		j.axeAAA("the admin call list")
		j.do("select two calls and cancel them",
			chromedp.Click(chromedp.CSS(`input[data-testid="select-call"][value="`+ids[0]+`"]`)),
			chromedp.Click(chromedp.CSS(`input[data-testid="select-call"][value="`+ids[1]+`"]`)),
			chromedp.Click(chromedp.CSS(`button[data-testid="bulk-cancel"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm-form"]`)),
		)
		if n := evaluate[int](j, "count the calls to confirm", `document.querySelectorAll('[data-testid="confirm-calls"] li').length`); n != 2 {
			t.Errorf("the confirmation lists %d calls, want the 2 selected", n)
		}
		j.axeAAA("the confirmation")
		// Nothing ends before the operator confirms with a reason.
		for _, id := range ids {
			if got := api.waitFor(inst.URL, id, time.Second, func(apiCall) bool { return true }); got.Status != "input_required" {
				t.Errorf("call %s is %s before the confirmation, want it still waiting", id, got.Status)
			}
		}
		const reason = "Booked twice by the test rig"
		j.do("give the reason and confirm",
			chromedp.SendKeys(chromedp.CSS(`textarea[data-testid="reason"]`), reason),
			chromedp.Click(chromedp.CSS(`button[data-testid="confirm"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="admin-notice"]`)),
		)
		if got := j.text(`[data-testid="admin-notice"]`); !strings.HasPrefix(got, "Cancelled 2 calls") {
			t.Errorf("the call list after cancelling says %q, want Cancelled 2 calls", got)
		}
		for i, id := range ids {
			got := api.waitFor(inst.URL, id, 30*time.Second, func(c apiCall) bool { return i == 2 || c.Status != "input_required" })
			if i < 2 && got.Status == "input_required" {
				t.Errorf("selected call %s is still waiting", id)
			}
			if i == 2 && got.Status != "input_required" {
				t.Errorf("the call not selected is %s, want it still waiting", got.Status)
			}
		}
		j.do("open the audit log", chromedp.Navigate(inst.URL+"/admin/audit"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="audit"]`)))
		rows := evaluate[[]string](j, "read the audit log", `[...document.querySelectorAll('[data-testid="audit-row"][data-action="admin.round.cancelled"]')].map(r => r.innerText)`)
		if len(rows) != 2 {
			t.Fatalf("%d admin.round.cancelled entries in the audit log, want 2: %q", len(rows), rows)
		}
		for _, r := range rows {
			if !strings.Contains(r, reason) {
				t.Errorf("audit entry %q does not give the reason %q", r, reason)
			}
		}
		j.axeAAA("the audit log")
	})

	t.Run("Sessions", func(t *testing.T) {
		t.Parallel()
		// A person of their own, so that signing out everywhere leaves the
		// admin of the other subtest alone; and another device of theirs, a
		// program signed in with the form, as a second browser would be.
		const name, password = "grace", "a long password for grace"
		getenv := func(k string) string {
			if k == "DATABASE_URL" {
				return db
			}
			return ""
		}
		if err := app.Command(context.Background(), []string{"user", "add", name}, strings.NewReader(password+"\n"), io.Discard, getenv); err != nil {
			t.Fatalf("web user add %s: %v", name, err)
		}
		laptop := newClient(t, db)
		laptop.login(inst.URL, name, password)
		signedIn := func(c *client) bool {
			status, _ := c.do("GET", inst.URL+"/account", "", "")
			return status == http.StatusOK
		}

		j := newJourneyFor(t, chrome, true, 8*time.Minute)
		j.emulate(390, "UTC")
		j.do("sign in as "+name,
			chromedp.Navigate(inst.URL+"/login"),
			chromedp.SendKeys(chromedp.ID("username"), name),
			chromedp.SendKeys(chromedp.ID("password"), password),
			chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
			chromedp.WaitVisible(chromedp.CSS(`header .who`)),
		)
		j.do("open the account page", chromedp.Navigate(inst.URL+"/account"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-sessions"]`)))
		sessions := evaluate[[]string](j, "list the sessions", `[...document.querySelectorAll('[data-testid="session"]')].map(r => r.innerText)`)
		if len(sessions) != 2 {
			t.Fatalf("sessions listed: %q, want this browser and the other device", sessions)
		}
		if n := evaluate[int](j, "count this browser", `document.querySelectorAll('[data-testid="session-current"]').length`); n != 1 {
			t.Errorf("%d sessions marked (this browser), want 1", n)
		}
		j.axeAAA("the account page's sessions")
		j.fits("the account page", 390)

		j.do("end the other device's session",
			chromedp.Click(chromedp.CSS(`[data-testid="session"]:not(:has([data-testid="session-current"])) button[data-testid="session-end"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-flash"]`)),
		)
		if left := evaluate[[]string](j, "list the sessions left", `[...document.querySelectorAll('[data-testid="session"]')].map(r => r.innerText)`); len(left) != 1 || !strings.Contains(left[0], "(this browser)") {
			t.Errorf("sessions left = %q, want this browser's only", left)
		}
		signedOut := func(c *client) bool {
			// The session's row is gone at once; an instance may hold what
			// it read of it until the notification of its end arrives.
			return poll(10*time.Second, func() error {
				if signedIn(c) {
					return errors.New("still signed in")
				}
				return nil
			}) == nil
		}
		if !signedOut(laptop) {
			t.Error("the ended session still opens the account page")
		}

		phone := newClient(t, db)
		phone.login(inst.URL, name, password)
		j.do("sign out everywhere", chromedp.Navigate(inst.URL+"/account"),
			chromedp.Click(chromedp.CSS(`button[data-testid="sessions-end-all"]`)),
			chromedp.WaitVisible(chromedp.ID("username")),
		)
		if !signedOut(phone) {
			t.Error("another device is still signed in after Sign out everywhere")
		}
		j.do("open the account page again", chromedp.Navigate(inst.URL+"/account"), chromedp.WaitVisible(chromedp.ID("username")))
	})
}
