package journeys

import (
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// emulate gives the tab a screen width and a time zone, as a person's
// laptop (1280 px) or phone (390 px) in Los Angeles has.
func (j *journey) emulate(width int64, zone string) {
	j.t.Helper()
	if _, err := chromedp.Call(j.ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: width, Height: 900, DeviceScaleFactor: 1, Mobile: width < 600,
	}); err != nil {
		j.t.Fatal(err)
	}
	if _, err := chromedp.Call(j.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone}); err != nil {
		j.t.Fatal(err)
	}
}

// TestBrowserPersonPages walks the pages a person works in, in headless
// Chromium in Los Angeles, at laptop and phone widths, with JavaScript on
// and off: titles instead of machine names, the waiting count, a round of
// several questions whose button says what it will do, a re-asked round
// that keeps what was typed and says why beside the field, a round of one
// answered with its own buttons (and Ctrl+Enter), a decline that says so,
// times in the person's zone, lines kept in results, a page that learns
// its round was answered elsewhere, and addresses that can be opened again.
// The subtests run one after another: they share one person, whose waiting
// count they check.
func TestBrowserPersonPages(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, demoSurfaceEnv(demoServer(t, nil)), nil)
	api := newClient(t, db)

	for _, width := range []int64{1280, 390} {
		t.Run("BookFlight"+map[int64]string{1280: "Laptop", 390: "Phone"}[width], func(t *testing.T) {
			j := newJourneyFor(t, browser, true, 3*time.Minute)
			j.emulate(width, "America/Los_Angeles")
			j.signIn(inst.URL)
			j.startTool(inst.URL, "book_flight")
			j.axe("round 1")

			if got := j.text(`h1`); !strings.HasPrefix(got, "Book a flight") {
				t.Errorf("heading = %q, want the server's title, Book a flight", got)
			}
			if got := j.text(`[data-testid="call-name"]`); got != "book_flight" {
				t.Errorf("machine name beside the title = %q, want book_flight", got)
			}
			j.waitFor("the waiting count", `document.title.startsWith("(1) ") && document.querySelector('[data-testid="inbox-count"]').textContent === "1"`)
			deadline := j.text(`[data-testid="deadline"]`)
			if !strings.Contains(deadline, "PST") || !strings.Contains(deadline, "(in 24 h)") {
				t.Errorf("deadline = %q, want it in Los Angeles time (PST) and from now (in 24 h)", deadline)
			}

			// Two questions: each has its own choice, and the button says
			// what pressing it will do.
			if got := j.text(`button[data-testid="submit-round"]`); got != "Send 2 answers" {
				t.Errorf("send button = %q, want Send 2 answers", got)
			}
			j.do("decline the party question", chromedp.Click(chromedp.CSS(`input[name="q0$action"][value="decline"]`)))
			if got := j.text(`button[data-testid="submit-round"]`); got != "Send 1 answer, decline 1" {
				t.Errorf("send button after a decline = %q, want Send 1 answer, decline 1", got)
			}
			j.do("answer round 1 with a past date",
				chromedp.Click(chromedp.CSS(`input[name="q0$action"][value="accept"]`)),
				chromedp.SendKeys(chromedp.CSS(`input[name="q1.destination"]`), "Lisbon"),
				chromedp.SetValue(chromedp.CSS(`input[name="q1.date"]`), "2020-01-02"),
				chromedp.SetValue(chromedp.CSS(`input[name="q0.passengers"]`), "2"),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
				chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"][data-seq="2"]`)),
			)

			// The server asks again for the trip: what was typed is back,
			// and its reason stands beside the date.
			if got := evaluate[string](j, "read the destination", `document.querySelector('input[name="q0.destination"]').value`); got != "Lisbon" {
				t.Errorf("destination in the re-asked round = %q, want Lisbon, as typed before", got)
			}
			if got := j.text(`.field.has-error`); !strings.Contains(got, "Departure date") || !strings.Contains(got, "must be today or later") {
				t.Errorf("the field in error says %q, want the server's reason about the departure date", got)
			}
			// Alone in its round, the question has three buttons.
			for choice, want := range map[string]string{"submit-round": "Send", "decline-round": "Decline", "cancel-round": "Cancel"} {
				if got := j.text(`button[data-testid="` + choice + `"]`); got != want {
					t.Errorf("%s button = %q, want %q", choice, got, want)
				}
			}
			j.do("fix the date and send with Ctrl+Enter",
				chromedp.SetValue(chromedp.CSS(`input[name="q0.date"]`), "2031-05-04"),
				chromedp.Click(chromedp.CSS(`input[name="q0.destination"]`)),
				chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
				chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"][data-seq="3"]`)),
			)
			j.do("decline the class", chromedp.Click(chromedp.CSS(`button[data-testid="decline-round"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)))
			j.axe("the declined call")

			if got := j.text(`h1 [data-testid="status"]`); got != "Declined" {
				t.Errorf("call badge = %q, want Declined, not Complete", got)
			}
			history := evaluate[[]string](j, "read the history", `[...document.querySelectorAll('[data-testid="history-round"]')].map(s => s.innerText)`)
			if len(history) != 3 {
				t.Fatalf("%d rounds in the history, want 3", len(history))
			}
			for i, want := range [][]string{
				{"Answered", "Destination: Lisbon", "Departure date: 2020-01-02", "Passengers: 2"},
				{"Answered", "Departure date: 2031-05-04"},
				{"Declined"},
			} {
				for _, w := range want {
					if !strings.Contains(history[i], w) {
						t.Errorf("round %d in the history says %q, want %q in it", i+1, history[i], w)
					}
				}
				if strings.Contains(history[i], "{") {
					t.Errorf("round %d in the history shows JSON: %q", i+1, history[i])
				}
			}
			j.waitFor("no count in the title", `!document.title.startsWith("(")`)
			j.do("open home", chromedp.Navigate(inst.URL+"/"))
			if got := j.text(`table [data-testid="status"]`); got != "Declined" {
				t.Errorf("home lists the call as %q, want Declined", got)
			}
			if got := j.text(`table a`); got != "Book a flight" {
				t.Errorf("home names the call %q, want Book a flight", got)
			}
		})
	}

	t.Run("DateTimeInTheirZone", func(t *testing.T) {
		j := newJourney(t, browser, true)
		j.emulate(390, "America/Los_Angeles")
		j.signIn(inst.URL)
		j.startTool(inst.URL, "schedule")
		if got := j.text(`.tz-note`); !strings.Contains(got, "America/Los_Angeles") {
			t.Errorf("time zone note = %q, want America/Los_Angeles", got)
		}
		j.do("answer",
			chromedp.SetValue(chromedp.CSS(`input[type="date"]`), "2031-05-04"),
			chromedp.SetValue(chromedp.CSS(`input[type="datetime-local"]`), "2031-05-04T09:30"),
			chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)),
		)
		if got := j.text(`[data-testid="result-text"]`); !strings.Contains(got, "reminder at 2031-05-04T09:30:00-07:00") {
			t.Errorf("result = %q, want the reminder sent with Los Angeles' offset in May, -07:00", got)
		}
		if got := j.text(`[data-testid="answer-lines"]`); !strings.Contains(got, "Remind me at: 2031-05-04 09:30 (America/Los_Angeles)") {
			t.Errorf("history = %q, want the reminder read back in Los Angeles time", got)
		}
	})

	t.Run("ResultKeepsItsLines", func(t *testing.T) {
		j := newJourney(t, browser, true)
		j.emulate(1280, "America/Los_Angeles")
		j.signIn(inst.URL)
		j.do("start a haiku",
			chromedp.Navigate(inst.URL+"/servers/demo/tools/write_haiku"),
			chromedp.SendKeys(chromedp.CSS(`input[name$="topic"]`), "rain"),
			chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
			chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"] textarea`)),
			chromedp.SetValue(chromedp.CSS(`form[data-testid="round-form"] textarea`), "Soft rain on the roof\nthe kettle begins to sing\nno one else is home"),
			chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)),
		)
		lines := evaluate[[]string](j, "read the result's lines", `document.querySelector('[data-testid="result-text"]').innerText.split("\n")`)
		if len(lines) != 4 || lines[3] != "no one else is home" {
			t.Errorf("result shown as lines %q, want the heading and the haiku's three lines", lines)
		}
	})

	t.Run("OpenPageLearnsRoundEnded", func(t *testing.T) {
		j := newJourney(t, browser, true)
		j.emulate(390, "America/Los_Angeles")
		j.signIn(inst.URL)
		callURL := j.startTool(inst.URL, "collect_user_info")
		j.do("start typing", chromedp.SendKeys(chromedp.CSS(`input[name="q0.name"]`), "Ada"))
		// Meanwhile the round is answered elsewhere: through the API.
		if status, body := api.answer(inst.URL, path.Base(callURL), 1, `{"user":{"action":"accept","content":{"name":"Grace"}}}`); status != http.StatusAccepted {
			t.Fatalf("answer through the API: %d %s", status, body)
		}
		j.do("wait for the page to say so", chromedp.WaitVisible(chromedp.CSS(`[data-testid="round-gone"]`)))
		// The notice is swapped in first; the form is closed as it settles.
		j.waitFor("the form to be closed", `document.querySelector('form[data-testid="round-form"]').dataset.gone === "1"`)
		if got := j.text(`[data-testid="round-gone"]`); !strings.Contains(got, "answered meanwhile") {
			t.Errorf("notice = %q, want it to say the round was answered meanwhile", got)
		}
		state := evaluate[map[string]any](j, "read the form", `(f => ({value: f.querySelector('input[name="q0.name"]').value,
			readOnly: f.querySelector('input[name="q0.name"]').readOnly,
			sendable: [...f.querySelectorAll("button")].some(b => !b.disabled)}))(document.querySelector('form[data-testid="round-form"]'))`)
		if state["value"] != "Ada" || state["readOnly"] != true || state["sendable"] != false {
			t.Errorf("form = %v, want what was typed (Ada) kept, read-only, and no button that sends", state)
		}
		j.axe("the ended round")
	})

	t.Run("NoJavaScript", func(t *testing.T) {
		j := newJourneyFor(t, browser, false, 3*time.Minute)
		j.emulate(390, "America/Los_Angeles")
		j.signIn(inst.URL)

		// Without JavaScript the browser cannot say its zone: the account
		// page sets one.
		j.do("set a time zone",
			chromedp.Navigate(inst.URL+"/account"),
			chromedp.SendKeys(chromedp.CSS(`#zone`), "Asia/Tokyo"),
			chromedp.Click(chromedp.CSS(`button[data-testid="zone-save"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-flash"]`)),
		)
		if got := j.text(`[data-testid="zone-showing"]`); got != "Asia/Tokyo" {
			t.Errorf("times shown in %q, want Asia/Tokyo", got)
		}
		j.axe("the account page")
		j.do("refuse a made-up zone",
			chromedp.SetValue(chromedp.CSS(`#zone`), "Mars/Olympus"),
			chromedp.Click(chromedp.CSS(`button[data-testid="zone-save"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="zone-error"]`)),
		)

		// A failed check's address can be opened again: it is the call.
		callURL := j.startTool(inst.URL, "create_task")
		if got := j.text(`[data-testid="deadline"]`); !strings.Contains(got, "JST") {
			t.Errorf("deadline = %q, want it in Tokyo time", got)
		}
		if got := j.text(`[data-testid="inbox-count"]`); got != "1" {
			t.Errorf("inbox count = %q, want 1", got)
		}
		j.do("send a title too short",
			chromedp.SendKeys(chromedp.CSS(`[name="q0.title"]`), "ab"),
			chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#error-summary`)),
		)
		failed, err := chromedp.Run(j.ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		j.do("open the address again", chromedp.Navigate(failed), chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)))
		if loc, _ := chromedp.Run(j.ctx, chromedp.Location()); loc != callURL {
			t.Errorf("opening %s lands on %s, want the call page %s", failed, loc, callURL)
		}
		if got := evaluate[string](j, "read the title", `document.querySelector('input[name="q0.title"]').value`); got != "ab" {
			t.Errorf("title after opening the address again = %q, want what was typed, ab", got)
		}
		j.do("cancel the task", chromedp.Click(chromedp.CSS(`button[data-testid="cancel-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)))
		if got := j.text(`h1 [data-testid="status"]`); got != "Cancelled" {
			t.Errorf("call badge = %q, want Cancelled", got)
		}
		if got := j.text(`[data-testid="history-round"] [data-testid="round-status"]`); got != "Cancelled" {
			t.Errorf("the round in the history = %q, want Cancelled", got)
		}

		// The inbox marks the rounds that left it with how they ended: the
		// task just cancelled first, the flights declined earlier on.
		j.do("open the inbox", chromedp.Navigate(inst.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="inbox-settled"]`)))
		settled := evaluate[[]string](j, "read the settled rounds", `[...document.querySelectorAll('[data-testid="settled-item"]')].map(li => li.innerText)`)
		if len(settled) == 0 || !strings.HasPrefix(settled[0], "Cancelled") || !strings.Contains(settled[0], "Create a task") {
			t.Errorf("inbox's settled rounds = %q, want Create a task first, marked Cancelled", settled)
		}
		declined := 0
		for _, s := range settled {
			if strings.HasPrefix(s, "Declined") && strings.Contains(s, "Book a flight") {
				declined++
			}
			if strings.HasPrefix(s, "Complete") {
				t.Errorf("inbox's settled round %q is marked Complete, want how the round ended", s)
			}
		}
		if declined == 0 {
			t.Errorf("inbox's settled rounds = %q, want the declined flights marked Declined", settled)
		}
		j.axeAAA("the inbox")
		j.fits("the inbox", 390)

		// A new token is shown once, after a redirect: reloading makes no
		// other and shows it no more.
		j.do("make a token",
			chromedp.Navigate(inst.URL+"/tokens"),
			chromedp.SendKeys(chromedp.CSS(`#token-name`), "laptop"),
			chromedp.Submit(chromedp.CSS(`#token-name`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="new-token"]`)),
		)
		if loc, _ := chromedp.Run(j.ctx, chromedp.Location()); loc != inst.URL+"/tokens" {
			t.Errorf("after making a token the address is %s, want %s/tokens", loc, inst.URL)
		}
		j.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#token-name`)))
		if n := evaluate[int](j, "count", `document.querySelectorAll('[data-testid="new-token"]').length`); n != 0 {
			t.Error("the new token is shown again after a reload")
		}
		if n := evaluate[int](j, "count tokens", `[...document.querySelectorAll("td")].filter(td => td.textContent.trim() === "laptop").length`); n != 1 {
			t.Errorf("%d tokens named laptop after a reload, want 1", n)
		}
	})
}
