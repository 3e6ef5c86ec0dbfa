package journeys

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserHandshake: a person answers a handshake-era server's mid-call
// questions through the page, while the instance holds the session.
func TestBrowserHandshake(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	old := newOldServer(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo[2025-11-25]=" + old.URL}, nil)
	tab := newTab(t, browser, true)

	tab.do("sign in",
		chromedp.Navigate(inst.URL+"/servers/demo/tools/ask_twice"),
		chromedp.SendKeys(chromedp.ID("username"), "admin"),
		chromedp.SendKeys(chromedp.ID("password"), adminPassword),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
	)
	tab.do("start the call", chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)))
	tab.do("wait for the first question", chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"][data-seq="1"]`)))
	if note := tab.text(`[data-testid="held-note"]`); !strings.Contains(note, "live connection") {
		t.Errorf("the page does not say the server waits on an open session: %q", note)
	}
	tab.do("answer the first question",
		chromedp.SendKeys(chromedp.CSS(`input[name="q0.name"]`), "Grace"),
		chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
	)
	tab.do("wait for the second question", chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"][data-seq="2"]`)))
	if q := tab.text(`section[data-testid="question"]`); !strings.Contains(q, "And your favourite colour, Grace?") {
		t.Errorf("second question = %q", q)
	}
	tab.do("answer the second question",
		chromedp.SendKeys(chromedp.CSS(`input[name="q0.colour"]`), "green"),
		chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
	)
	tab.do("wait for the result", chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)))
	if got := tab.text(`[data-testid="result-text"]`); got != "Grace likes green" {
		t.Errorf("result = %q", got)
	}
	if calls, _ := old.seen(); calls != 1 {
		t.Errorf("the server got %d calls, want 1", calls)
	}
}
