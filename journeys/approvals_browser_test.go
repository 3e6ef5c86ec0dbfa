package journeys

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserApproval: in headless Chromium at 1280 px (JavaScript on) and
// 390 px (off), an approver of team finance opens a waiting transfer from
// her inbox: Rounds' question names who asked, the tool, its description
// and what it may do, the arguments in the tool's own form, filled in; she
// lowers the amount and approves, and the page shows her decision, the
// amount asked and the amount approved, and who is still asked. axe-core
// finds nothing on the page, before and after.
func TestBrowserApproval(t *testing.T) {
	t.Parallel()
	chrome := newBrowser(t)
	w := newApprovalWorld(t, twoOfFinance)
	// The bank's tools, listed once, give the approval its form.
	if status, body := w.people["ann"].do("GET", w.a.URL+"/api/v1/servers/bank/tools", "", ""); status != http.StatusOK {
		t.Fatalf("listing the bank's tools: %d %s", status, body)
	}
	for i, width := range []int64{1280, 390} {
		js := width == 1280
		approver := []string{"fay", "gus"}[i]
		t.Run(fmt.Sprintf("%dpx", width), func(t *testing.T) {
			id := w.start(fmt.Sprintf(`{"amount": %d, "to": "bob"}`, 5000+i))
			j := newJourneyFor(t, chrome, js, 3*time.Minute)
			j.emulate(width, "Europe/Lisbon")
			j.signInAs(w.b.URL, approver, "a long password")
			j.do("open the inbox", chromedp.Navigate(w.b.URL+"/inbox"))
			if inbox := j.text("main"); !strings.Contains(inbox, "Rounds asks for your approval before this tool runs.") {
				t.Errorf("the inbox at %d px: %s", width, inbox)
			}
			j.do("open the approval", chromedp.Click(chromedp.CSS(`a[href="/calls/`+id.ID+`"]`)),
				chromedp.WaitVisible(chromedp.CSS(`form[data-testid="approval-form"]`)))
			for css, want := range map[string]string{
				`[data-testid="approval-caller"]`:      "ann",
				`[data-testid="approval-tool"]`:        "transfer",
				`[data-testid="approval-description"]`: "Sends money from the company account.",
				`[data-testid="approval-annotations"]`: "Destructive: the tool may change or delete things.",
				`[data-testid="approval-asks"]`:        "Needs 2 approvals: 2 of team:finance.",
				`[data-testid="approval-approved"]`:    "nobody yet",
			} {
				if got := strings.TrimSpace(j.text(css)); got != want {
					t.Errorf("%s at %d px: %q, want %q", css, width, got, want)
				}
			}
			if got := evaluate[string](j, "the amount asked", `document.querySelector('[name="arg.amount"]').value`); got != fmt.Sprint(5000+i) {
				t.Errorf("the amount field: %q, want %d", got, 5000+i)
			}
			j.fits("the approval page", width)
			j.axeZero(fmt.Sprintf("the approval page at %d px", width))

			if !js {
				j.scripts(true)
			}
			j.do("lower the amount", chromedp.SetValue(chromedp.CSS(`[name="arg.amount"]`), "2000"))
			if !js {
				j.scripts(false)
			}
			j.do("approve", chromedp.Click(chromedp.CSS(`button[data-testid="approve"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-decisions"]`)))
			if got := j.text(`[data-testid="approval-decisions"]`); !strings.Contains(got, "Approved by "+approver) {
				t.Errorf("the decisions after approving: %q", got)
			}
			if got := j.text(`[data-testid="approval-approved"]`); strings.TrimSpace(got) != approver {
				t.Errorf("approved: %q, want %s", got, approver)
			}
			waiting := j.text(`[data-testid="approval-waiting"]`)
			if strings.Contains(waiting, approver) || !strings.Contains(waiting, "jon") {
				t.Errorf("still asked: %q", waiting)
			}
			if asked, changed := j.text(`[data-testid="approval-original"]`), j.text(`[data-testid="approval-changed"]`); !strings.Contains(asked, "500") ||
				!strings.Contains(changed, `"amount": 2000`) {
				t.Errorf("the amounts asked and changed: %q, %q", asked, changed)
			}
			j.fits("the decided approval", width)
			j.axeZero(fmt.Sprintf("the approval page after a decision, at %d px", width))
		})
	}
}
