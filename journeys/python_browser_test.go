package journeys

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/mcptest"
)

// TestBrowserPythonServers walks FastMCP 4's tools in headless Chromium at
// laptop and phone widths, over two instances (each call started on A and
// answered on B): a batched 2026-07-28 round shows its questions in the
// server's order, its untitled lone value labelled by the question, its
// default chosen, and its answers reach the server in that order; so do a
// dataclass's fields in a 2026-07-28 round; a ctx.elicit tool fails under
// auto, its page says it asks over a 2025-11-25 session, and the button
// starts it again that way; the held round shows the dataclass's fields in
// the server's order and the answer goes back in it; the tool's next call
// goes over a session at once; a scalar's "Value" is labelled by the
// question; the untitled multi-select is rendered and answered; the admin
// page lists what was learnt and forgets it. axe-core checks each page.
func TestBrowserPythonServers(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	fakes := map[int64]*mcptest.Fake{1280: mcptest.NewFake(t, mcptest.FastMCP4), 390: mcptest.NewFake(t, mcptest.FastMCP4)}
	env := map[string]string{"MCP_SERVERS": "laptop=" + fakes[1280].URL + ",phone=" + fakes[390].URL}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)

	for _, width := range []int64{1280, 390} {
		server := map[int64]string{1280: "laptop", 390: "phone"}[width]
		fake := fakes[width]
		t.Run(server, func(t *testing.T) {
			j := newJourneyFor(t, browser, true, 8*time.Minute)
			j.emulate(width, "Europe/Lisbon")
			j.signIn(a.URL)
			// onB opens the page the tab shows on the other instance.
			onB := func() {
				t.Helper()
				loc := evaluate[string](j, "location", `location.pathname`)
				j.within("open "+loc+" on B", chromedp.Navigate(b.URL+loc), chromedp.WaitVisible(chromedp.CSS(`#call`)))
			}
			start := func(tool string) {
				t.Helper()
				t.Logf("%s: start %s", time.Now().Format("15:04:05.000"), tool)
				j.within("start "+tool,
					chromedp.Navigate(a.URL+"/servers/"+server+"/tools/"+tool),
					chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
					chromedp.WaitVisible(chromedp.CSS(`#call`)),
				)
			}
			startAgain := func(tool string) {
				t.Helper()
				j.within("wait for "+tool+"'s offer", chromedp.WaitVisible(chromedp.CSS(`[data-testid="session-offer"]`)))
				j.within("start "+tool+" again", chromedp.Click(chromedp.CSS(`button[data-testid="start-again"]`)))
			}
			waitRound := func(what string) {
				t.Helper()
				j.within("wait for "+what, chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)))
			}
			waitResult := func(want string) {
				t.Helper()
				j.within("wait for the result", chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)))
				if got := j.text(`[data-testid="result-text"]`); got != want {
					t.Errorf("result = %q, want %q", got, want)
				}
			}
			// label is the text of the label of the field named name.
			label := func(name string) string {
				t.Helper()
				return strings.TrimSpace(evaluate[string](j, "label of "+name,
					`(() => { const f = document.querySelector('[name="`+name+`"]'); const l = f.labels && f.labels[0]
					|| f.closest("fieldset")?.querySelector("legend"); return l ? l.textContent : "(no label)" })()`))
			}

			// A batched 2026-07-28 round: the server's order, on the page
			// and back on the wire.
			start("book_trip_batched")
			waitRound("the batched round")
			if got := evaluate[string](j, "question order", `[...document.querySelectorAll('[data-testid="question"]')].map(q => q.dataset.key).join()`); got != "destination,travellers,cabin" {
				t.Errorf("questions on the page in order %s, want destination,travellers,cabin", got)
			}
			if got := label("q1.value"); !strings.Contains(got, "How many travellers?") || strings.Contains(got, "Value") {
				t.Errorf("the lone untitled value is labelled %q, want the question", got)
			}
			j.axe("the batched round")
			onB()
			if !evaluate[bool](j, "the default", `document.querySelector('input[name="q2.value"][value="economy"]').checked`) {
				t.Error("the cabin's default, economy, is not chosen beforehand")
			}
			j.within("answer the batched round on B",
				chromedp.SendKeys(chromedp.CSS(`[name="q0.value"]`), "Porto"),
				chromedp.SetValue(chromedp.CSS(`[name="q1.value"]`), "2"),
				chromedp.Click(chromedp.CSS(`input[name="q2.value"][value="first"]`)),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			)
			waitResult("Booked 2 to Porto, first")
			if body := lastToolsCall(fake, "book_trip_batched"); !inOrder(body, `"inputResponses":{"destination":`, `"travellers":`, `"cabin":`) {
				t.Errorf("answers reached the server as %s, want destination, travellers, cabin", body)
			}

			// A dataclass in a 2026-07-28 round: its fields in the
			// server's order, and back in it.
			j.within("start seed_types_modern",
				chromedp.Navigate(a.URL+"/servers/"+server+"/tools/seed_types_modern"),
				chromedp.SetValue(chromedp.CSS(`form[action$="/tools/seed_types_modern"] input[type="text"]`), "dataclass"),
				chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
			)
			waitRound("the dataclass round")
			if got := evaluate[string](j, "field order", `[...document.querySelectorAll('form[data-testid="round-form"] [name^="q0."]')].map(f => f.name).join()`); got != "q0.name,q0.age" {
				t.Errorf("the 2026-07-28 round's fields in order %s, want q0.name,q0.age", got)
			}
			onB()
			j.within("answer the dataclass on B",
				chromedp.SendKeys(chromedp.CSS(`[name="q0.name"]`), "Grace"),
				chromedp.SetValue(chromedp.CSS(`[name="q0.age"]`), "85"),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			)
			waitResult("Hello Grace, you are 85 years old")
			if body := lastToolsCall(fake, "seed_types_modern"); !strings.Contains(body, `"content":{"name":"Grace","age":85}`) {
				t.Errorf("the answer reached the server as %s, want name before age", body)
			}

			// A ctx.elicit tool under auto: the call says it asks over a
			// session, and the person starts it again that way.
			start("collect_user_info")
			j.within("wait for the offer", chromedp.WaitVisible(chromedp.CSS(`[data-testid="session-offer"]`)))
			if got := j.text(`[data-testid="session-offer"]`); !strings.Contains(got, "2025-11-25 session") {
				t.Errorf("offer = %q", got)
			}
			j.axe("the call offering a session")
			onB()
			j.within("start it again on B", chromedp.Click(chromedp.CSS(`button[data-testid="start-again"]`)))
			waitRound("the held round")
			if got := evaluate[string](j, "field order", `[...document.querySelectorAll('form[data-testid="round-form"] [name^="q0."]')].map(f => f.name).join()`); got != "q0.name,q0.age" {
				t.Errorf("fields on the page in order %s, want q0.name,q0.age", got)
			}
			j.axe("the held round")
			j.within("answer the held round on A",
				chromedp.Navigate(a.URL+evaluate[string](j, "location", `location.pathname`)),
				chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)),
				chromedp.SendKeys(chromedp.CSS(`[name="q0.name"]`), "Ada"),
				chromedp.SetValue(chromedp.CSS(`[name="q0.age"]`), "36"),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			)
			waitResult("Hello Ada, you are 36 years old")
			if body := answerBody(fake); !strings.Contains(body, `"content":{"name":"Ada","age":36}`) {
				t.Errorf("the answer reached the server as %s, want name before age", body)
			}

			// The tool's next call goes over a session at once; declined.
			start("collect_user_info")
			waitRound("the next call's round")
			if found, session := lastCallSession(fake, "collect_user_info"); !found || !session {
				t.Error("the next call of the tool did not go over a session")
			}
			j.within("decline", chromedp.Click(chromedp.CSS(`button[data-testid="decline-round"]`)))
			waitResult("Information not provided")

			// A scalar str: labelled by the question, not "Value".
			start("get_user_name")
			startAgain("get_user_name")
			waitRound("the name round")
			if got := label("q0.value"); !strings.Contains(got, "What's your name?") || strings.Contains(got, "Value") {
				t.Errorf("the scalar is labelled %q, want the question", got)
			}
			onB()
			j.within("answer the name on B",
				chromedp.SendKeys(chromedp.CSS(`[name="q0.value"]`), "Grace"),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			)
			waitResult("Hello, Grace!")

			// The untitled multi-select.
			start("select_tags")
			startAgain("select_tags")
			waitRound("the tags round")
			j.axe("the multi-select")
			onB()
			j.within("choose two tags on B",
				chromedp.Click(chromedp.CSS(`input[name="q0.value"][value="bug"]`)),
				chromedp.Click(chromedp.CSS(`input[name="q0.value"][value="documentation"]`)),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			)
			waitResult("Selected tags: bug, documentation")

			// What was learnt, on the admin page; one tool forgotten.
			j.within("open the server's admin page",
				chromedp.Navigate(a.URL+"/admin/servers/"+server),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="learnt"]`)),
			)
			if got := evaluate[string](j, "learnt tools", `[...document.querySelectorAll('[data-testid="learnt-tool"]')].map(r => r.dataset.tool).sort().join()`); got != "collect_user_info,get_user_name,select_tags" {
				t.Errorf("the admin page lists %q as learnt", got)
			}
			j.axe("the admin server page")
			j.within("forget collect_user_info on B",
				chromedp.Navigate(b.URL+"/admin/servers/"+server),
				chromedp.Click(chromedp.CSS(`[data-testid="learnt-tool"][data-tool="collect_user_info"] button[data-testid="forget"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="admin-notice"]`)),
			)
			if got := evaluate[string](j, "learnt tools", `[...document.querySelectorAll('[data-testid="learnt-tool"]')].map(r => r.dataset.tool).sort().join()`); got != "get_user_name,select_tags" {
				t.Errorf("after forgetting collect_user_info the admin page lists %q", got)
			}
			start("collect_user_info")
			j.within("wait for the offer again", chromedp.WaitVisible(chromedp.CSS(`[data-testid="session-offer"]`)))
			if _, session := lastCallSession(fake, "collect_user_info"); session {
				t.Error("after forgetting, the tool still went over a session")
			}
			noViolations(t, fake)
		})
	}
}

// stepLimit bounds one step of a journey on a loaded machine.
const stepLimit = 90 * time.Second

// within is do, with each call bounded by stepLimit so that a step that
// hangs fails with what the page shows.
func (j *journey) within(what string, steps ...chromedp.Action[chromedp.Void]) {
	j.t.Helper()
	ctx, cancel := context.WithTimeout(j.ctx, stepLimit)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		j.t.Fatalf("%s: %v\n%s", what, err, j.page())
	}
}

// lastToolsCall is the body of the latest tools/call of tool.
func lastToolsCall(f *mcptest.Fake, tool string) string {
	body := ""
	for _, e := range f.Exchanges() {
		if e.RPC == "tools/call" && bytes.Contains(e.Body, []byte(`"name":"`+tool+`"`)) {
			body = string(e.Body)
		}
	}
	return body
}

// answerBody is the body of the latest answer Rounds sent to a question the
// server asked on a session.
func answerBody(f *mcptest.Fake) string {
	body := ""
	for _, e := range f.Exchanges() {
		if e.Method == "POST" && e.RPC == "" && e.Session != "" && bytes.Contains(e.Body, []byte(`"result":`)) {
			body = string(e.Body)
		}
	}
	return body
}

// inOrder says whether each of parts occurs in s, one after another.
func inOrder(s string, parts ...string) bool {
	at := 0
	for _, p := range parts {
		i := strings.Index(s[at:], p)
		if i < 0 {
			return false
		}
		at += i + len(p)
	}
	return true
}
