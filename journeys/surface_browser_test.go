package journeys

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// signIn opens base in tab and signs in as the first admin.
func (tb *tab) signIn(base string) {
	tb.t.Helper()
	tb.do("open the home page", chromedp.Navigate(base+"/"))
	tb.do("sign in",
		chromedp.SendKeys(chromedp.ID("username"), "admin"),
		chromedp.SendKeys(chromedp.ID("password"), adminPassword),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
	)
}

// TestBrowserMultipleInputs answers the conformance server's round of an
// elicitation, a sampling request and a roots request on one screen, in
// one submit: the roots are shown as answered automatically, the reply is
// checked like any field, and the history shows all three answers.
func TestBrowserMultipleInputs(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, everythingEnv(t), nil)
	for _, tt := range []struct {
		name string
		js   bool
	}{
		{"JavaScript", true},
		{"NoJavaScript", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tab := newTab(t, browser, tt.js)
			answerMultipleInputs(t, tab, inst.URL)
		})
	}
}

func answerMultipleInputs(t *testing.T, tab *tab, base string) {
	t.Helper()
	tab.signIn(base)
	tab.do("open the server", chromedp.Click(chromedp.CSS(`a[data-testid="server-everything"]`)))
	tab.do("open the tool", chromedp.Click(chromedp.CSS(`a[data-testid="tool-test_input_required_result_multiple_inputs"]`)))
	tab.do("start the call", chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)))
	tab.do("wait for the round", chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"][data-seq="1"]`)))

	roots := tab.text(`section[data-kind="roots"]`)
	for _, want := range []string{"Answered automatically", "Data", "file:///srv/data", "Home", "file:///home/user"} {
		if !strings.Contains(roots, want) {
			t.Errorf("roots question shows %q; want it to contain %q", roots, want)
		}
	}
	if got := tab.text(`section[data-kind="sampling"] [data-testid="message-text"]`); got != "Generate a greeting" {
		t.Errorf("the conversation shows %q", got)
	}
	if got := tab.text(`section[data-kind="sampling"] [data-testid="max-tokens"]`); got != "50 tokens" {
		t.Errorf("max tokens: %q", got)
	}

	// Without a reply the browser would stop the form; the server must too.
	tab.do("send without a reply",
		chromedp.SendKeys(chromedp.CSS(`section[data-key="user_name"] input[type="text"]`), "Alice"),
		chromedp.SetAttributeValue(chromedp.CSS(`button[data-testid="submit-round"]`), "formnovalidate", ""),
		chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="reply-error"]`)),
	)
	if got := tab.attr(`section[data-key="user_name"] input[type="text"]`, "value"); got != "Alice" {
		t.Errorf("after the failed check the name reads %q; want what was typed", got)
	}
	tab.do("write the reply and send once",
		chromedp.SendKeys(chromedp.CSS(`textarea[data-testid="sampling-reply"]`), "Hello"),
		chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)),
	)
	if got := tab.text(`[data-testid="result-text"]`); got != "Hello Alice — 2 root(s) visible" {
		t.Errorf("result = %q", got)
	}
	history := tab.text(`section[data-testid="history-round"]`)
	for _, want := range []string{"Answered automatically with 2 roots", "Replied as the model", "Hello", "Alice"} {
		if !strings.Contains(history, want) {
			t.Errorf("history %q lacks %q", history, want)
		}
	}
}

// TestBrowserDemoSurface walks the demo's server page: a prompt that asks
// before it answers, a binary resource offered for download, a template, a
// tool asking for sampling and one needing roots.
func TestBrowserDemoSurface(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, demoSurfaceEnv(demoServer(t, nil)), nil)
	tab := newTab(t, browser, true)
	tab.signIn(inst.URL)
	server := inst.URL + "/servers/demo"

	// The prompt: its argument on the server page, its question on the call page.
	tab.do("open the server", chromedp.Click(chromedp.CSS(`a[data-testid="server-demo"]`)))
	tab.do("get the prompt",
		chromedp.SendKeys(chromedp.CSS(`form[data-name="trip_plan"] input[type="text"]`), "Porto"),
		chromedp.Click(chromedp.CSS(`button[data-testid="get-prompt-trip_plan"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"][data-seq="1"]`)),
	)
	if q := tab.text(`section[data-key="trip"]`); !strings.Contains(q, "How long will you stay in Porto") {
		t.Errorf("the prompt asks %q", q)
	}
	tab.do("answer the prompt's question",
		chromedp.Clear(chromedp.CSS(`input[name="q0.days"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="q0.days"]`), "4"),
		chromedp.SendKeys(chromedp.CSS(`[name="q0.likes"]`), "tiles"),
		chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="prompt-messages"]`)),
	)
	if got := tab.text(`[data-testid="prompt-messages"] [data-role="user"]`); !strings.Contains(got, "Plan a 4-day trip to Porto. I like tiles.") {
		t.Errorf("the prompt's user message reads %q", got)
	}

	// A binary resource: a download link, never shown.
	tab.do("read the logo",
		chromedp.Navigate(server),
		chromedp.Click(chromedp.CSS(`button[data-testid="read-logo"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[data-testid="resource-download"]`)),
	)
	if href := tab.attr(`a[data-testid="resource-download"]`, "href"); !strings.HasSuffix(href, "/contents/0") {
		t.Errorf("download link = %q", href)
	}
	if n := tab.count(`[data-testid="result"] img`); n != 0 {
		t.Errorf("the resource's image is shown %d times; want it only offered for download", n)
	}

	// A template's variable makes the URI.
	tab.do("read a greeting",
		chromedp.Navigate(server),
		chromedp.SendKeys(chromedp.CSS(`form[data-template="demo://greetings/{name}"] input[type="text"]`), "Ada"),
		chromedp.Click(chromedp.CSS(`button[data-testid="read-template-greeting"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="resource-text"]`)),
	)
	if got := tab.text(`[data-testid="resource-text"]`); got != "Hello, Ada!" {
		t.Errorf("greeting = %q", got)
	}

	// Sampling: the person writes the model's reply.
	tab.do("ask for a haiku",
		chromedp.Navigate(inst.URL+"/servers/demo/tools/write_haiku"),
		chromedp.SendKeys(chromedp.CSS(`input[name="arg.topic"]`), "rain"),
		chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
		chromedp.WaitVisible(chromedp.CSS(`textarea[data-testid="sampling-reply"]`)),
	)
	if got := tab.text(`[data-testid="system-prompt"]`); !strings.Contains(got, "You are a poet") {
		t.Errorf("system prompt = %q", got)
	}
	if got := tab.text(`[data-testid="model-hints"]`); got != "claude" {
		t.Errorf("model hints = %q", got)
	}
	tab.do("write the haiku",
		chromedp.SendKeys(chromedp.CSS(`textarea[data-testid="sampling-reply"]`), "Drops on the window"),
		chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)),
	)
	if got := tab.text(`[data-testid="result-text"]`); !strings.Contains(got, "A haiku about rain, by human:") || !strings.Contains(got, "Drops on the window") {
		t.Errorf("haiku result = %q", got)
	}

	// Roots: nobody is asked.
	tab.do("show the roots",
		chromedp.Navigate(inst.URL+"/servers/demo/tools/show_roots"),
		chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)),
	)
	if got := tab.text(`[data-testid="result-text"]`); got != "You shared 2 roots: Data (file:///srv/data), file:///home/user" {
		t.Errorf("roots result = %q", got)
	}
	if got := tab.text(`section[data-testid="history-round"]`); !strings.Contains(got, "Answered automatically") {
		t.Errorf("the roots round's history reads %q", got)
	}
}

// count is how many elements match css.
func (tb *tab) count(css string) int {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(css)+`).length`))
	if err != nil {
		tb.t.Fatalf("count %s: %v", css, err)
	}
	return n
}
