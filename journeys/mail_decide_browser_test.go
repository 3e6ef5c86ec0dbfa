package journeys

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserMailDecision opens a yes/no round's mail link in headless
// Chromium at laptop and phone widths, as the person mailed: the link
// asks her to sign in and comes back, the page says what its button will
// answer, and the button answers. axe-core finds nothing, of any impact,
// on the page before and after.
func TestBrowserMailDecision(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	mb := newMailbox(t)
	addr := freeAddr(t)
	inst := startInstance(t, db, reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil),
		"LISTEN_ADDR": addr, "PUBLIC_URL": "http://" + addr}), nil)
	addPeople(t, db)
	admin := newClient(t, db)
	yes := regexp.MustCompile(`Yes: http://[^/\s]+(/decide/[A-Za-z0-9_-]+)`)
	for i, width := range []int64{1280, 390} {
		t.Run(fmt.Sprintf("%dpx", width), func(t *testing.T) {
			path := fmt.Sprintf("/tmp/report-%d.txt", width)
			status, body := admin.do("POST", inst.URL+"/api/v1/calls", "application/json",
				`{"server":"demo","tool":"confirm_delete","arguments":{"path":"`+path+`"},"assignee":"ada"}`)
			if status != http.StatusCreated {
				t.Fatalf("start: %d %s", status, body)
			}
			var call apiCall
			_ = json.Unmarshal(body, &call)
			m := mb.waitMail(t, "ada@example.com", "demo asks you", i+1, 10*time.Second)[i]
			link := yes.FindStringSubmatch(m.Body)
			if link == nil {
				t.Fatalf("no Yes link in the mail:\n%s", m.Body)
			}
			j := newJourney(t, browser, true)
			j.emulate(width, "America/Los_Angeles")
			j.do("open the link and sign in",
				chromedp.Navigate(inst.URL+link[1]),
				chromedp.WaitVisible(chromedp.ID("username")),
				chromedp.SendKeys(chromedp.ID("username"), "ada"),
				chromedp.SendKeys(chromedp.ID("password"), "a long password"),
				chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="decide-submit"]`)),
			)
			if got := j.text(`[data-testid="decide-question"]`); got != "Delete "+path+"? This cannot be undone." {
				t.Errorf("the page asks %q", got)
			}
			if got := j.text(`[data-testid="decide-submit"]`); got != "Answer Yes" {
				t.Errorf("the button says %q", got)
			}
			j.fits("the decision page", width)
			j.axeZero(fmt.Sprintf("the decision page at %d px", width))
			if got := admin.waitFor(inst.URL, call.ID, time.Second, func(apiCall) bool { return true }); !roundIs(1)(got) {
				t.Fatalf("opening the page changed the call: %+v", got)
			}
			j.do("press the button",
				chromedp.Click(chromedp.CSS(`[data-testid="decide-submit"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="decide-sent"]`)),
			)
			j.fits("the page answered", width)
			j.axeZero(fmt.Sprintf("the page answered at %d px", width))
			done := admin.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
			if resultText(t, done.Result) != "Deleted "+path {
				t.Errorf("the call ends %+v", done)
			}
		})
	}
}
