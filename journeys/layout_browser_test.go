package journeys

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserEveryPageFits opens every page a person or an operator sees in
// headless Chromium at desktop (1280 px) and phone (390 px) widths, in the
// light and the dark theme, with JavaScript on and off: no page scrolls
// sideways, the header stays compact on a phone, and axe-core finds nothing,
// its AAA contrast rule (7:1) included.
func TestBrowserEveryPageFits(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{
		"MCP_SERVERS": "demo=" + demoServer(t, nil) + ",down=http://" + freeAddr(t) + "/mcp",
	}, nil)

	// A call waiting for answers, so that its page, the inbox and the admin
	// call pages have something to show.
	c := newClient(t, db)
	call := c.startCall(inst.URL, "book_flight", "{}").ID
	c.waitFor(inst.URL, call, 20*time.Second, roundIs(1))

	pages := []string{
		"/", "/inbox", "/calls", "/calls/" + call, "/tokens", "/account", "/servers/demo",
		"/servers/demo/tools/book_flight", "/admin", "/admin/servers", "/admin/servers/demo", "/admin/users",
		"/admin/calls", "/admin/calls/" + call, "/admin/audit", "/admin/instances", "/admin/provisioning",
	}
	cli(t, db, "", "scim", "token", "create", "okta-production-tenant") // so the provisioning page has its table
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("JavaScript=%v", js), func(t *testing.T) {
			t.Parallel()
			j := newJourneyFor(t, browser, js, 5*time.Minute)
			j.signIn(inst.URL)
			for _, size := range []struct {
				width, height int64
				dark          bool
			}{{1280, 900, false}, {390, 844, false}, {390, 844, true}} {
				if !js && size.width != 390 {
					continue // the layout is the same; the phone is where it is tight
				}
				j.do("resize", chromedp.EmulateViewport(size.width, size.height))
				theme := "light"
				if size.dark {
					theme = "dark"
				}
				if _, err := chromedp.Call(j.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}},
				}); err != nil {
					t.Fatal(err)
				}
				for _, p := range pages {
					what := fmt.Sprintf("%s at %d px, %s", p, size.width, theme)
					j.do("open "+what, chromedp.Navigate(inst.URL+p), chromedp.WaitVisible(chromedp.CSS("main")))
					if w := evaluate[int64](j, "width of "+what, `document.documentElement.scrollWidth`); w > size.width {
						wide := evaluate[[]string](j, "what is too wide", fmt.Sprintf(`Array.from(document.querySelectorAll("main *"))
							.filter(e => e.getBoundingClientRect().right > %d).slice(0, 5)
							.map(e => e.tagName + "." + e.className + ": " + (e.textContent || "").slice(0, 40))`, size.width))
						t.Errorf("%s scrolls sideways: %d px wide; too wide: %q", what, w, wide)
					}
					if size.width == 390 {
						if h := evaluate[float64](j, "header of "+what, `document.querySelector("header.site").getBoundingClientRect().height`); h > 96 {
							t.Errorf("%s: the header takes %.0f px of the phone's screen, want at most 96", what, h)
						}
					}
					if js && (size.width == 390 || p == "/") {
						j.axeAAA(what)
					}
				}
			}
		})
	}
}

// axeAAA is axe with the enhanced (AAA, 7:1) contrast rule switched on.
func (j *journey) axeAAA(what string) {
	j.t.Helper()
	if !j.js {
		j.scripts(true)
		defer j.scripts(false)
	}
	evaluate[chromedp.Void](j, "load axe-core", axeSource+";undefined")
	violations, err := chromedp.Run(j.ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ["violations"],
			rules: {"color-contrast-enhanced": {enabled: true}}}).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical" || v.id === "color-contrast-enhanced")
		.map(v => ({id: v.id, impact: v.impact, help: v.help,
			nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary)})))`, chromedp.EvalAwaitPromise))
	if err != nil {
		j.t.Fatalf("run axe-core on %s: %v", what, err)
	}
	for _, v := range violations {
		j.t.Errorf("axe-core on %s: %s (%s): %s\n  %s", what, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n  "))
	}
}

// TestBrowserInboxCountReadsApart: at 390 px, with a round waiting, the
// top bar's Inbox link shows its count as a badge apart from the word,
// not "Inbox1", and a screen reader reads it "Inbox 1 waiting".
func TestBrowserInboxCountReadsApart(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	call := c.startCall(inst.URL, "confirm_delete", `{"path":"/tmp/x"}`).ID
	c.waitFor(inst.URL, call, 20*time.Second, roundIs(1))

	j := newJourney(t, browser, true)
	j.signIn(inst.URL)
	j.do("open the inbox at 390 px", chromedp.EmulateViewport(390, 844), chromedp.Navigate(inst.URL+"/inbox"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="inbox-count"]`)))
	nodes, err := chromedp.Run(j.ctx, chromedp.Nodes(chromedp.CSS(`[data-testid="nav-inbox"]`)))
	if err != nil || len(nodes) != 1 {
		t.Fatalf("the Inbox link: %v, %d found", err, len(nodes))
	}
	fetch := false
	tree, err := chromedp.Call(j.ctx, accessibility.GetPartialAXTree,
		accessibility.GetPartialAXTreeParams{BackendNodeID: nodes[0].BackendNodeID, FetchRelatives: &fetch})
	if err != nil || len(tree.Nodes) == 0 || tree.Nodes[0].Name == nil {
		t.Fatalf("the Inbox link's accessibility node: %v", err)
	}
	var name string
	if err := json.Unmarshal([]byte(tree.Nodes[0].Name.Value), &name); err != nil {
		t.Fatal(err)
	}
	if name != "Inbox 1 waiting" {
		t.Errorf("the Inbox link reads %q, want %q", name, "Inbox 1 waiting")
	}
	// What a sighted person sees: the word, then, apart from it, the
	// count on a background of its own.
	gap := evaluate[float64](j, "the gap before the count", `(() => {
		const link = document.querySelector('[data-testid="nav-inbox"]');
		const text = link.firstChild, word = document.createRange();
		word.setStart(text, 0);
		word.setEnd(text, text.textContent.trimEnd().length);
		return document.querySelector('[data-testid="inbox-count"]').getBoundingClientRect().left - word.getBoundingClientRect().right;
	})()`)
	if gap < 3 {
		t.Errorf("the count stands %.1f px from the word Inbox: it reads as one word", gap)
	}
	if bg := evaluate[string](j, "the count's background", `getComputedStyle(document.querySelector('[data-testid="inbox-count"]')).backgroundColor`); bg == "rgba(0, 0, 0, 0)" {
		t.Error("the count has no badge of its own")
	}
	j.axeAAA("/inbox at 390 px, with a count")
}
