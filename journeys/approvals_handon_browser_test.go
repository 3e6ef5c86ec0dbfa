package journeys

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserApprovalHandOn: in headless Chromium at 1280 px (JavaScript
// on) and 390 px (off), an admin opens a call waiting for fay's and gus's
// approval, hands fay's place on to kim with the form beside "Still
// asked", and the page says "Handed on from fay to kim by admin" and asks
// kim. The page fits and axe-core finds nothing, before and after.
func TestBrowserApprovalHandOn(t *testing.T) {
	t.Parallel()
	chrome := newBrowser(t)
	w := newApprovalWorld(t, `[{"tools": ["transfer"], "ask": ["fay", "gus"], "needs": 2}]`)
	w.addPerson("kim")
	for i, width := range []int64{1280, 390} {
		js := width == 1280
		t.Run(fmt.Sprintf("%dpx", width), func(t *testing.T) {
			c := w.start(fmt.Sprintf(`{"amount": %d, "to": "bob"}`, 50+i))
			j := newJourneyFor(t, chrome, js, 3*time.Minute)
			j.emulate(width, "Europe/Lisbon")
			j.signInAs(w.a.URL, "admin", adminPassword)
			j.do("open the call", chromedp.Navigate(w.a.URL+"/calls/"+c.ID),
				chromedp.WaitVisible(chromedp.CSS(`form[data-testid="approval-handon"]`)))
			j.fits("the approval with the hand-on form", width)
			j.axeZero(fmt.Sprintf("the approval with the hand-on form at %d px", width))
			j.do("hand fay's place on to kim",
				chromedp.SetValue(chromedp.CSS(`[data-testid="handon-from"]`), "fay"),
				chromedp.SendKeys(chromedp.CSS(`[data-testid="handon-to"]`), "kim"),
				chromedp.Click(chromedp.CSS(`[data-testid="handon-submit"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-handon-entry"]`)))
			if got := j.text(`[data-testid="approval-handon-entry"]`); !strings.Contains(got, "Handed on from fay to kim by admin") {
				t.Errorf("the history at %d px: %q", width, got)
			}
			if waiting := j.text(`[data-testid="approval-waiting"]`); !strings.Contains(waiting, "kim") || strings.Contains(waiting, "fay") {
				t.Errorf("still asked after the hand-on, at %d px: %q", width, waiting)
			}
			j.fits("the approval handed on", width)
			j.axeZero(fmt.Sprintf("the approval handed on, at %d px", width))
		})
	}
}
