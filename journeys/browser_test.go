package journeys

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserBookFlight books a flight in headless Chromium the way a person
// does, clicking and typing, once with JavaScript (htmx updates the page)
// and once without (the meta refresh reloads it). With JavaScript, the
// server answers only once the call page is up, so each round comes in
// through htmx.
func TestBrowserBookFlight(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)

	for _, tt := range []struct {
		name string
		js   bool
	}{
		{"JavaScript", true},
		{"NoJavaScript", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var held gate
			var wrap func(http.Handler) http.Handler
			if tt.js {
				held = make(gate)
				wrap = held.wrap
			}
			inst := startInstance(t, newDatabase(t), map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, wrap)}, nil)
			tab := newTab(t, browser, tt.js)

			// The home page sends a stranger to sign in, and back after.
			tab.do("open the home page", chromedp.Navigate(inst.URL+"/"))
			tab.do("sign in",
				chromedp.SendKeys(chromedp.ID("username"), "admin"),
				chromedp.SendKeys(chromedp.ID("password"), adminPassword),
				chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
			)
			tab.do("open the tool", chromedp.Click(chromedp.CSS(`a[data-testid="tool-book_flight"]`)))
			tab.do("start the call", chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)))
			if tt.js {
				tab.markPage()
				held.open(t)
			}

			tab.do("wait for round 1", chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"][data-seq="1"]`)))
			if tt.js {
				tab.sameDocument("round 1")
			}
			// app.js lets the browser check answers by dropping formnovalidate;
			// still there, it shows that the page's scripts did not run.
			novalidate := tab.hasAttr(`button[data-testid="submit-round"]`, "formnovalidate")
			if novalidate == tt.js {
				t.Errorf("submit button has formnovalidate = %v with JavaScript %v", novalidate, tt.js)
			}
			tab.do("answer round 1",
				chromedp.SendKeys(chromedp.CSS(`input[name="q1.destination"]`), "Lisbon"),
				// Typing into a date input depends on the locale's order of
				// the fields; setting its value does not.
				chromedp.SetValue(chromedp.CSS(`input[name="q1.date"]`), "2031-05-04"),
				chromedp.Clear(chromedp.CSS(`input[name="q0.passengers"]`)),
				chromedp.SendKeys(chromedp.CSS(`input[name="q0.passengers"]`), "2"),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			)
			// The answered round shows up in the history of the page the
			// answer redirects to.
			tab.do("wait for the page after round 1", chromedp.WaitVisible(chromedp.CSS(`section[data-testid="history-round"]`)))
			if tt.js {
				tab.markPage()
				held.open(t)
			}

			tab.do("wait for round 2", chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"][data-seq="2"]`)))
			if tt.js {
				tab.sameDocument("round 2")
			}
			// The server's question repeats the first round's answers, so it
			// shows that the date reached the server.
			question := tab.text(`section[data-testid="question"][data-key="seat"]`)
			if !strings.Contains(question, "2 passengers to Lisbon on 2031-05-04") {
				t.Errorf("round 2 asks %q; want it to repeat 2 passengers to Lisbon on 2031-05-04", question)
			}
			tab.do("answer round 2",
				chromedp.Click(chromedp.CSS(`input[name="q0.class"][value="business"]`)),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			)
			if tt.js {
				held.open(t)
			}

			tab.do("wait for the result", chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)))
			result := tab.text(`[data-testid="result-text"]`)
			for _, want := range []string{"Booked 2 passengers to Lisbon", "2031-05-04", "Business"} {
				if !strings.Contains(result, want) {
					t.Errorf("result = %q; want it to contain %q", result, want)
				}
			}
			if status := tab.attr(`#call`, "data-status"); status != "complete" {
				t.Errorf("call status = %q, want complete", status)
			}
		})
	}
}

// gate holds each tools/call request the demo server gets until the test
// lets one through with open.
type gate chan struct{}

func (g gate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			select {
			case <-g:
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// open lets one held request through, failing the test when none comes.
func (g gate) open(t *testing.T) {
	t.Helper()
	select {
	case g <- struct{}{}:
	case <-time.After(stepTimeout):
		t.Fatal("the server got no tools/call to let through")
	}
}

// newBrowser starts headless Chromium for the test and returns a context
// that owns it, or skips the test when there is no Chromium.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM_PATH")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Skipf("no Chromium at %s (set CHROMIUM_PATH): %v", path, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Do starts the browser and ties it to ctx, which has no
	// deadline; each step gets its own.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// tab is one browser tab with cookies of its own, driven by one subtest.
type tab struct {
	t            *testing.T
	ctx          context.Context
	markedStatus string // the call's status when markPage ran
}

// stepTimeout bounds each step; the app answers in well under a second, and
// the page without JavaScript reloads every two.
const stepTimeout = 15 * time.Second

func newTab(t *testing.T, browser context.Context, js bool) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// As for the browser, the first Do ties the tab to the context it gets,
	// so it gets one with no deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	tb := &tab{t: t, ctx: ctx}
	if !js {
		sctx, cancel := context.WithTimeout(ctx, stepTimeout)
		defer cancel()
		if _, err := chromedp.Call(sctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatalf("turn JavaScript off: %v", err)
		}
	}
	return tb
}

// do runs steps, failing the test with what the page shows when one fails.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v\n%s", what, err, tb.page())
	}
}

func (tb *tab) text(css string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		tb.t.Fatalf("text of %s: %v\n%s", css, err, tb.page())
	}
	return s
}

func (tb *tab) attr(css, name string) string {
	tb.t.Helper()
	return tb.attribute(css, name).Value
}

func (tb *tab) hasAttr(css, name string) bool {
	tb.t.Helper()
	return tb.attribute(css, name).Exists
}

func (tb *tab) attribute(css, name string) chromedp.AttributeResult {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	a, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(css), name))
	if err != nil {
		tb.t.Fatalf("%s of %s: %v\n%s", name, css, err, tb.page())
	}
	return a
}

// markPage leaves a mark on the call page's document, which a full reload
// would wipe, and notes whether the server was still working then.
func (tb *tab) markPage() {
	tb.t.Helper()
	tb.do("wait for the call page", chromedp.WaitVisible(chromedp.CSS(`#call`)))
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	status, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`window.roundsMark = true; document.getElementById("call").dataset.status`))
	if err != nil {
		tb.t.Fatalf("mark the page: %v", err)
	}
	tb.markedStatus = status
}

// sameDocument checks that the form appeared in the marked document, so
// htmx brought it in without a reload. The server must not have asked yet
// when the page was marked, or there was nothing to bring in.
func (tb *tab) sameDocument(what string) {
	tb.t.Helper()
	if tb.markedStatus != "queued" && tb.markedStatus != "running" {
		tb.t.Errorf("%s: the page was %q when marked; want the server still working, for htmx to bring the form in", what, tb.markedStatus)
		return
	}
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	marked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.roundsMark === true`))
	if err != nil {
		tb.t.Fatalf("read the mark: %v", err)
	}
	if !marked {
		tb.t.Errorf("%s: the page reloaded to show the form; want htmx to update it in place", what)
	}
}

// page describes what the tab shows, for failure messages.
func (tb *tab) page() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	body, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
	if err != nil {
		body = "(no page: " + err.Error() + ")"
	}
	return "at " + loc + ":\n" + body
}
