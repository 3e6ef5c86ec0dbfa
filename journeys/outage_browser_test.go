package journeys

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserServerComesBack: a person's answer could not reach the server.
// The call page says when it tries again, fits a phone's width, and shows
// the result by itself once the server is back — with JavaScript (htmx)
// and without (the page refreshes itself).
func TestBrowserServerComesBack(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	for _, tt := range []struct {
		name  string
		js    bool
		width int64
	}{
		{"JavaScriptPhone", true, 390},
		{"NoJavaScriptDesktop", false, 1280},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mcp := newFlakyServer(t, nil)
			inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + mcp.URL(), "RETRY_WINDOW": "2m"}, nil)
			c := newClient(t, db)
			call := c.startCall(inst.URL, "confirm_delete", `{"path":"/srv/cache"}`)
			c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
			mcp.down()
			if status, body := c.answer(inst.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
				t.Fatalf("answer: %d %s", status, body)
			}

			tab := newTab(t, browser, tt.js)
			tab.do("set the width", chromedp.EmulateViewport(tt.width, 800))
			tab.do("open the call", chromedp.Navigate(inst.URL+"/calls/"+call.ID))
			tab.do("sign in",
				chromedp.SendKeys(chromedp.ID("username"), "admin"),
				chromedp.SendKeys(chromedp.ID("password"), adminPassword),
				chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
			)
			// The live fragment is swapped in anew on each try: read the page
			// as it stands, until the note is there.
			var note string
			var fits bool
			_ = poll(stepTimeout, func() error {
				ctx, cancel := context.WithTimeout(tab.ctx, stepTimeout)
				defer cancel()
				got, err := chromedp.Run(ctx, chromedp.Evaluate[[]any](`(() => {
					const n = document.querySelector('[data-testid="retry-note"]');
					return n ? [n.innerText, n.getBoundingClientRect().right <= window.innerWidth] : ["", false];
				})()`))
				if err == nil && len(got) == 2 {
					note, _ = got[0].(string)
					fits, _ = got[1].(bool)
				}
				if note == "" {
					return errors.New("no retry note yet")
				}
				return nil
			})
			if !strings.Contains(note, "The server is unreachable; trying again at ") || !strings.Contains(note, "connection refused") {
				t.Fatalf("the note says %q\n%s", note, tab.page())
			}
			if !fits {
				t.Errorf("the note does not fit %dpx", tt.width)
			}

			mcp.up(mcp.addr)
			// The next try comes after as long as it has been trying; the
			// page then shows the result with nobody doing anything.
			ctx, cancel := context.WithTimeout(tab.ctx, 90*time.Second)
			defer cancel()
			if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#call[data-status="complete"]`))); err != nil {
				t.Fatalf("the page did not show the result: %v\n%s", err, tab.page())
			}
			if got := tab.text(`[data-testid="result"]`); !strings.Contains(got, "Deleted /srv/cache") {
				t.Errorf("result = %q", got)
			}
		})
	}
}
