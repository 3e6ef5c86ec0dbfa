package journeys

import (
	"context"
	_ "embed"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// axeSource is axe-core (testdata/axe.README), injected into round pages to
// check them for accessibility.
//
//go:embed testdata/axe.min.js
var axeSource string

// journeyTimeout bounds one person's whole journey through the pages.
const journeyTimeout = 90 * time.Second

// TestBrowserForms answers rounds of every kind in headless Chromium the way
// a person does: a form with every field type, a failed check fixed with
// the keyboard alone, a URL-mode consent, a round without JavaScript, and a
// draft that follows the person to another device. axe-core checks each
// round page.
func TestBrowserForms(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)

	t.Run("EveryField", func(t *testing.T) {
		t.Parallel()
		j := newJourney(t, browser, true)
		j.signIn(inst.URL)
		j.startTool(inst.URL, "create_task")
		j.axe("the round")
		j.do("fill every field",
			chromedp.SendKeys(chromedp.CSS(`[name="q0.title"]`), "Write the docs"),
			chromedp.SendKeys(chromedp.CSS(`[name="q0.description"]`), "All of it, with examples."),
			// Typing into a date input depends on the locale's order of the
			// fields; setting its value does not.
			chromedp.SetValue(chromedp.CSS(`[name="q0.due"]`), "2031-05-04"),
			chromedp.Click(chromedp.CSS(`input[name="q0.priority"][value="high"]`)),
			chromedp.Clear(chromedp.CSS(`[name="q0.estimate"]`)),
			chromedp.SendKeys(chromedp.CSS(`[name="q0.estimate"]`), "2.25"),
			chromedp.Clear(chromedp.CSS(`[name="q0.points"]`)),
			chromedp.SendKeys(chromedp.CSS(`[name="q0.points"]`), "8"),
			chromedp.Click(chromedp.CSS(`input[name="q0.urgent"]`)),
			chromedp.SendKeys(chromedp.CSS(`[name="q0.notify"]`), "ada@example.com"),
			chromedp.SendKeys(chromedp.CSS(`[name="q0.link"]`), "https://example.org/docs"),
			chromedp.Click(chromedp.CSS(`input[name="q0.tags"][value="bug"]`)),
			chromedp.Click(chromedp.CSS(`input[name="q0.tags"][value="feature"]`)), // ticked by default
			chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="structured"]`)),
		)
		if got := j.text(`[data-testid="result-text"]`); got != `Created task "Write the docs" with high priority.` {
			t.Errorf("result = %q", got)
		}
		var task map[string]any
		if err := json.Unmarshal([]byte(j.text(`[data-testid="structured"]`)), &task); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"title": "Write the docs", "description": "All of it, with examples.", "due": "2031-05-04",
			"priority": "high", "estimate": 2.25, "points": 8.0, "urgent": true,
			"notify": "ada@example.com", "link": "https://example.org/docs", "tags": []any{"bug"},
		}
		for k, v := range want {
			got, _ := json.Marshal(task[k])
			wantJSON, _ := json.Marshal(v)
			if string(got) != string(wantJSON) {
				t.Errorf("the server got %s = %s, want %s", k, got, wantJSON)
			}
		}
	})

	t.Run("FailedCheckFixedByKeyboard", func(t *testing.T) {
		t.Parallel()
		j := newJourney(t, browser, true)
		j.signIn(inst.URL)
		j.startTool(inst.URL, "create_task")
		// A crafted form: the browser would refuse these itself, so its
		// checks are turned off to reach the server's.
		evaluate[bool](j, "turn off the browser's checks", `document.querySelector('form[data-testid="round-form"]').noValidate = true`)
		j.do("send a title too short and a fractional story point",
			chromedp.SendKeys(chromedp.CSS(`[name="q0.title"]`), "ab"),
			chromedp.Clear(chromedp.CSS(`[name="q0.points"]`)),
			chromedp.SendKeys(chromedp.CSS(`[name="q0.points"]`), "1.5"),
			chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#error-summary`)),
		)
		j.waitFor("the error summary to have the focus", `document.activeElement && document.activeElement.id === "error-summary"`)
		for name, want := range map[string]string{"q0.title": "ab", "q0.points": "1.5"} {
			if got := evaluate[string](j, "read "+name, `document.querySelector('[name="`+name+`"]').value`); got != want {
				t.Errorf("%s = %q after the failed check, want what was typed, %q", name, got, want)
			}
		}
		links := evaluate[[]string](j, "read the summary", `[...document.querySelectorAll("#error-summary a")].map(a => a.textContent)`)
		if len(links) != 2 || !strings.HasPrefix(links[0], "Title:") || !strings.HasPrefix(links[1], "Story points:") {
			t.Errorf("error summary = %q, want Title and Story points", links)
		}
		j.axe("the round with errors")

		// Keyboard only from here: Tab to the first link of the summary,
		// Enter puts the cursor in the title; Shift+Tab from there is the
		// summary's second link, whose Enter leads to the story points.
		j.do("fix the title", chromedp.KeyEvent(kbTab), chromedp.KeyEvent(kbEnter))
		j.waitFor("the cursor in the title", `document.activeElement.name === "q0.title"`)
		j.do("retype the title", chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)), chromedp.KeyEvent("Write the docs"))
		j.do("go to the story points", chromedp.KeyEvent(kbTab, chromedp.KeyModifiers(chromedp.ModifierShift)), chromedp.KeyEvent(kbEnter))
		j.waitFor("the cursor in the story points", `document.activeElement.name === "q0.points"`)
		j.do("retype the story points and send with Enter",
			chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)), chromedp.KeyEvent("2"),
			chromedp.KeyEvent(kbEnter),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="structured"]`)),
		)
		var task map[string]any
		if err := json.Unmarshal([]byte(j.text(`[data-testid="structured"]`)), &task); err != nil {
			t.Fatal(err)
		}
		if task["title"] != "Write the docs" || task["points"] != 2.0 {
			t.Errorf("the server got title %v and points %v, want Write the docs and 2", task["title"], task["points"])
		}
	})

	t.Run("URLConsent", func(t *testing.T) {
		t.Parallel()
		j := newJourney(t, browser, true)
		j.signIn(inst.URL)
		j.startTool(inst.URL, "connect_account")
		j.axe("the URL-mode round")
		full := strings.TrimSpace(j.text(`[data-testid="url-full"]`))
		if !strings.HasPrefix(full, "https://example.com/connect?session=") || len(full) <= len("https://example.com/connect?session=") {
			t.Errorf("full URL shown = %q, want https://example.com/connect?session=…", full)
		}
		if host := j.text(`[data-testid="url-host"]`); host != "example.com" {
			t.Errorf("host set apart = %q, want example.com", host)
		}
		link := evaluate[map[string]string](j, "read the link", `(a => ({href: a.getAttribute("href"), target: a.target, rel: a.rel}))(document.querySelector('[data-testid="url-open"]'))`)
		if link["href"] != full || link["target"] != "_blank" || link["rel"] != "noopener noreferrer" {
			t.Errorf("link = %v, want href %q, target _blank, rel noopener noreferrer", link, full)
		}
		// Alone in its round, the question is answered by pressing one of
		// three buttons: nothing is chosen before the person presses one.
		if n := evaluate[int](j, "count choices", `document.querySelectorAll('input[name="q0$action"]').length`); n != 0 {
			t.Errorf("%d pre-made choices; want a button each", n)
		}
		if got := strings.TrimSpace(j.text(`button[data-testid="submit-round"]`)); got != "I've finished" {
			t.Errorf("the send button says %q, want I've finished", got)
		}
		j.do("finish and send",
			chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)),
		)
		if got := j.text(`[data-testid="result-text"]`); got != "Connected" {
			t.Errorf("result = %q, want Connected", got)
		}
		if got := j.fetched("example.com"); len(got) > 0 {
			t.Errorf("the page fetched the URL it only had to show: %q", got)
		}
		targets, err := chromedp.Targets(j.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range targets {
			if strings.Contains(tg.URL, "example.com") {
				t.Errorf("a tab opened %s without the person's click", tg.URL)
			}
		}
	})

	t.Run("NoJavaScript", func(t *testing.T) {
		t.Parallel()
		j := newJourney(t, browser, false)
		j.signIn(inst.URL)
		j.startTool(inst.URL, "select_tags")
		j.axe("the round without JavaScript")
		j.do("tick two tags, untick the default, and save a draft",
			chromedp.Click(chromedp.CSS(`input[name="q0.tags"][value="bug"]`)),
			chromedp.Click(chromedp.CSS(`input[name="q0.tags"][value="docs"]`)),
			chromedp.Click(chromedp.CSS(`input[name="q0.tags"][value="feature"]`)),
			chromedp.Click(chromedp.CSS(`button[data-testid="save-draft"]`)),
			// Empty until the page is back from saving.
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="draft-status"]:not(:empty)`)),
		)
		if got := j.text(`[data-testid="draft-status"]`); !strings.Contains(got, "Draft saved") {
			t.Errorf("draft status = %q after saving", got)
		}
		ticked := evaluate[[]string](j, "read the tags", `[...document.querySelectorAll('input[name="q0.tags"]:checked')].map(i => i.value)`)
		if !slices.Equal(ticked, []string{"bug", "docs"}) {
			t.Errorf("tags ticked after saving the draft = %q, want bug and docs", ticked)
		}
		j.do("send",
			chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)),
		)
		if got := j.text(`[data-testid="result-text"]`); got != "Tagged: Bug, Documentation" {
			t.Errorf("result = %q", got)
		}
	})

	t.Run("DraftOnAnotherDevice", func(t *testing.T) {
		t.Parallel()
		laptop := newJourney(t, browser, true)
		laptop.signIn(inst.URL)
		callURL := laptop.startTool(inst.URL, "create_task")
		laptop.do("type a title and move on",
			chromedp.SendKeys(chromedp.CSS(`[name="q0.title"]`), "Half a thought"),
			chromedp.Click(chromedp.CSS(`input[name="q0.priority"][value="low"]`)),
		)
		laptop.waitFor("the draft to be saved", `document.querySelector('[data-testid="draft-status"]').textContent.includes("Draft saved.")`)

		phone := newJourney(t, browser, true)
		phone.signIn(inst.URL)
		phone.do("open the call", chromedp.Navigate(callURL), chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)))
		if got := evaluate[string](phone, "read the title", `document.querySelector('[name="q0.title"]').value`); got != "Half a thought" {
			t.Errorf("title on another device = %q, want the draft's", got)
		}
		if !evaluate[bool](phone, "read the priority", `document.querySelector('input[name="q0.priority"][value="low"]').checked`) {
			t.Error("priority on another device is not the draft's low")
		}
	})
}

// Keys for chromedp.KeyEvent.
const (
	kbTab   = "\t"
	kbEnter = "\r"
)

// journey is one person in a tab of their own (their own cookies), within
// journeyTimeout.
type journey struct {
	t   *testing.T
	ctx context.Context
	js  bool

	mu       sync.Mutex
	requests []string // every URL the tab asked for
}

func newJourney(t *testing.T, browser context.Context, js bool) *journey {
	t.Helper()
	return newJourneyFor(t, browser, js, journeyTimeout)
}

// newJourneyFor is newJourney for a journey that may take longer.
func newJourneyFor(t *testing.T, browser context.Context, js bool, limit time.Duration) *journey {
	t.Helper()
	bounded, cancel := context.WithTimeout(browser, limit)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(bounded, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	j := &journey{t: t, ctx: ctx, js: js}
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			j.mu.Lock()
			j.requests = append(j.requests, e.Request.URL)
			j.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !js {
		j.scripts(false)
	}
	return j
}

// scripts turns the page's JavaScript on or off.
func (j *journey) scripts(on bool) {
	j.t.Helper()
	if _, err := chromedp.Call(j.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on}); err != nil {
		j.t.Fatalf("turn JavaScript on=%v: %v", on, err)
	}
}

// do runs steps, failing the test with what the page shows when one fails.
func (j *journey) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	j.t.Helper()
	if err := chromedp.Do(j.ctx, steps...); err != nil {
		j.t.Fatalf("%s: %v\n%s", what, err, j.page())
	}
}

// waitFor waits until a JavaScript condition holds.
func (j *journey) waitFor(what, condition string) {
	j.t.Helper()
	if _, err := chromedp.Run(j.ctx, chromedp.Poll[bool](condition, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		j.t.Fatalf("wait for %s: %v\n%s", what, err, j.page())
	}
}

func (j *journey) text(css string) string {
	j.t.Helper()
	s, err := chromedp.Run(j.ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		j.t.Fatalf("text of %s: %v\n%s", css, err, j.page())
	}
	return s
}

// evaluate runs JavaScript in the page and returns its value.
func evaluate[T any](j *journey, what, expr string) T {
	j.t.Helper()
	v, err := chromedp.Run(j.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		j.t.Fatalf("%s: %v\n%s", what, err, j.page())
	}
	return v
}

// signIn signs the journey's person in as the first admin.
func (j *journey) signIn(base string) {
	j.t.Helper()
	j.do("sign in",
		chromedp.Navigate(base+"/login"),
		chromedp.SendKeys(chromedp.ID("username"), "admin"),
		chromedp.SendKeys(chromedp.ID("password"), adminPassword),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
		chromedp.WaitVisible(chromedp.CSS(`header .who`)),
	)
}

// startTool starts a demo tool from its page and waits for its first round.
// It returns the call page's URL.
func (j *journey) startTool(base, tool string) string {
	j.t.Helper()
	j.do("start "+tool,
		chromedp.Navigate(base+"/servers/demo/tools/"+tool),
		chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)),
	)
	loc, err := chromedp.Run(j.ctx, chromedp.Location())
	if err != nil {
		j.t.Fatal(err)
	}
	return loc
}

// axeViolation is what the test reports of an axe-core violation.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axe runs axe-core on the page and fails the test on any serious or
// critical violation. Without JavaScript it turns scripts on for the check
// only; the page's own scripts, skipped while it loaded, stay unrun.
func (j *journey) axe(what string) {
	j.t.Helper()
	if !j.js {
		j.scripts(true)
		defer j.scripts(false)
	}
	evaluate[chromedp.Void](j, "load axe-core", axeSource+";undefined")
	violations, err := chromedp.Run(j.ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => ({id: v.id, impact: v.impact, help: v.help,
			nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary)})))`, chromedp.EvalAwaitPromise))
	if err != nil {
		j.t.Fatalf("run axe-core on %s: %v", what, err)
	}
	for _, v := range violations {
		j.t.Errorf("axe-core on %s: %s (%s): %s\n  %s", what, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n  "))
	}
}

// fetched lists the URLs the tab asked for whose host ends with host.
func (j *journey) fetched(host string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, u := range j.requests {
		if strings.Contains(u, host) {
			out = append(out, u)
		}
	}
	return out
}

// page describes what the tab shows, for failure messages.
func (j *journey) page() string {
	ctx, cancel := context.WithTimeout(j.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	body, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
	if err != nil {
		body = "(no page: " + err.Error() + ")"
	}
	return "at " + loc + ":\n" + body
}
