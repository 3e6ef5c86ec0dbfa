package journeys

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/mcptest"
)

// TestBrowserProgress: a tool that says how far it got, step by step. Its
// call page shows the server's words and a bar out of the total, moving
// without a reload at laptop width (JavaScript on); at phone width without
// JavaScript, a reload shows where it stands. Stop asks, then stops the
// call, with JavaScript and without.
func TestBrowserProgress(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	rep := mcptest.NewReporter(t, 20, 1500*time.Millisecond)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "reporter=" + rep.URL, "MCP_REQUEST_TIMEOUT": "30s"}, nil)
	for _, c := range []struct {
		width int64
		js    bool
	}{{1280, true}, {390, false}} {
		j := newJourneyFor(t, browser, c.js, 2*time.Minute)
		j.emulate(c.width, "Europe/Lisbon")
		j.signIn(inst.URL)
		j.within("start the long report",
			chromedp.Navigate(inst.URL+"/servers/reporter/tools/long_report"),
			chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#call`)),
		)
		if !c.js {
			// The page stays as it was loaded: a reload shows where the
			// call stands, once the server has said.
			loc := evaluate[string](j, "location", `location.pathname`)
			j.eventually("a reload shows the progress", `document.querySelector('[data-testid="progress-bar"]')`, inst.URL+loc, 30*time.Second)
		}
		j.within("wait for the progress", chromedp.WaitVisible(chromedp.CSS(`[data-testid="progress-bar"]`)))
		first := j.text(`[data-testid="progress-message"]`)
		if !strings.HasPrefix(first, "Step ") || !strings.HasSuffix(first, " of 20 <b>") {
			t.Errorf("the progress says %q, want the server's words as text", first)
		}
		if max := evaluate[string](j, "the bar's total", `document.querySelector('[data-testid="progress-bar"]').max + ""`); max != "20" {
			t.Errorf("the bar's total is %s, want 20", max)
		}
		if !strings.Contains(j.text(`[data-testid="stop"]`), "Stop the call") {
			t.Error("the running call offers no Stop")
		}
		j.fits("the running call", c.width)
		if c.js {
			// (Without JavaScript a running call's page refreshes itself,
			// which axe-core flags; the page with JavaScript is checked.)
			j.axe("the running call")
			evaluate[bool](j, "mark the page", `window.stayed = true`)
			j.waitFor("the progress to move", `(document.querySelector('[data-testid="progress-message"]')?.textContent || "") !== `+jsString(first)+
				` || !!document.querySelector('[data-testid="result-text"]')`)
			if !evaluate[bool](j, "no reload", `window.stayed === true`) {
				t.Error("the page reloaded to move the bar")
			}
		}
		// Stop asks first (a disclosure, which needs no script), then stops.
		if evaluate[bool](j, "stop shown at once", `document.querySelector('[data-testid="stop-confirm"]').checkVisibility()`) {
			t.Error("Stop acts without asking")
		}
		j.within("stop the call",
			chromedp.Click(chromedp.CSS(`[data-testid="stop"] summary`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="stop-confirm"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="stop-confirm"]`)),
		)
		j.within("the call to read cancelled", chromedp.WaitVisible(chromedp.CSS(`#call[data-status="cancelled"]`)))
		j.fits("the stopped call", c.width)
	}
	if n := len(rep.Tokens()); n != 2 {
		t.Errorf("%d calls reached the server, want 2", n)
	}
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
