package journeys

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/store"
)

// TestHandOnAPI: the assignee hands a waiting round on through the API on
// one instance and the new assignee answers on the other; the round says
// who handed it on from whom, and so do the audit log and the page. The
// owner of a call given to someone else is refused (403), anyone else does
// not see it (404), an unknown name is refused (422), an ended round is a
// conflict (409), and so is a URL-mode question, whose page says why
// instead of offering to hand it on.
func TestHandOnAPI(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	logs := &logSink{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	a := startInstance(t, db, env, logs)
	b := startInstance(t, db, env, logs)
	for _, name := range []string{"ada", "bob", "carol", "finn"} {
		cli(t, db, "a long password\n", "user", "add", name)
	}
	admin := newClient(t, db)
	admin.login(a.URL, "admin", adminPassword)
	ada, bob, finn := signedInAPI(t, db, "ada"), signedInAPI(t, db, "bob"), signedInAPI(t, db, "finn")
	carol := signedIn(t, db, a.URL, "carol")

	status, body := carol.do("POST", a.URL+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"book_flight","arguments":{},"assignee":"ada"}`)
	var call apiCall
	if status != http.StatusCreated || json.Unmarshal(body, &call) != nil {
		t.Fatalf("start: %d %s", status, body)
	}
	ada.waitFor(a.URL, call.ID, 10*time.Second, roundIs(1))
	assign := func(c *client, base string, seq int, to string) (int, string) {
		t.Helper()
		status, body := c.do("POST", base+"/api/v1/calls/"+call.ID+"/rounds/"+strconv.Itoa(seq)+"/assign", "application/json", `{"to":"`+to+`"}`)
		return status, string(body)
	}
	if status, body := assign(finn, a.URL, 1, "finn"); status != http.StatusNotFound {
		t.Errorf("someone else hands the round on: %d %s", status, body)
	}
	if status, body := assign(carol, a.URL, 1, "carol"); status != http.StatusForbidden || !strings.Contains(body, "Only whom this round is asked of") {
		t.Errorf("the owner hands on a round given to ada: %d %s, want 403 with a sentence", status, body)
	}
	if status, body := assign(ada, a.URL, 1, "nobody"); status != http.StatusUnprocessableEntity || !strings.Contains(body, `There is no one named \"nobody\"`) {
		t.Errorf("handing on to nobody: %d %s, want 422 with a sentence", status, body)
	}
	status, raw := assign(ada, a.URL, 1, "bob")
	var handed answeredCall
	if status != http.StatusOK || json.Unmarshal([]byte(raw), &handed) != nil {
		t.Fatalf("ada hands the round on to bob: %d %s", status, raw)
	}
	if h := handed.Round; handed.Assignee != "bob" || h == nil || h.HandedOn == nil || *h.HandedOn != (handedOnJSON{From: "ada", To: "bob", By: "ada"}) {
		t.Errorf("the API's call after the hand-over = %s; want assignee bob, handed on from ada to bob by ada", raw)
	}
	if status, _ := ada.answer(b.URL, call.ID, 1, tripAnswers); status != http.StatusNotFound {
		t.Errorf("ada answers after handing the round on: %d", status)
	}
	if status, body := bob.answer(b.URL, call.ID, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("bob answers the round handed on, on the other instance: %d %s", status, body)
	}
	bob.waitFor(a.URL, call.ID, 10*time.Second, roundIs(2))
	if status, body := assign(admin, b.URL, 1, "carol"); status != http.StatusConflict || !strings.Contains(body, "no longer waiting") {
		t.Errorf("handing on an answered round: %d %s, want 409", status, body)
	}
	page := carol.page(a.URL + "/calls/" + call.ID)
	if got := page.Find(`[data-testid="history-round"] [data-testid="handed-on"]`).Text(); !strings.Contains(got, "from ada to bob by ada") {
		t.Errorf("the history says %q, want the hand-over from ada to bob by ada", got)
	}
	if got := page.Find(`[data-testid="history-round"] [data-testid="answered-by"]`).Text(); got != "bob" {
		t.Errorf("the history says round 1 answered by %q, want bob", got)
	}
	var handedOn []string
	for _, line := range auditLines(admin, a.URL, call.ID) {
		if strings.HasPrefix(line, "round.handed_on") {
			handedOn = append(handedOn, line)
		}
	}
	if len(handedOn) != 1 || !strings.HasPrefix(handedOn[0], "round.handed_on by ada ") ||
		!strings.Contains(handedOn[0], `"from": "ada"`) || !strings.Contains(handedOn[0], `"to": "bob"`) {
		t.Errorf("the audit log's hand-overs = %q, want one by ada from ada to bob", handedOn)
	}

	// A URL-mode question stays with the person who started the call.
	urlCall := carol.startCall(a.URL, "connect_account", `{}`)
	carol.waitFor(a.URL, urlCall.ID, 10*time.Second, roundIs(1))
	status, body = carol.do("POST", b.URL+"/api/v1/calls/"+urlCall.ID+"/rounds/1/assign", "application/json", `{"to":"ada"}`)
	if status != http.StatusConflict || !strings.Contains(string(body), "cannot be handed on") {
		t.Errorf("handing on a URL-mode question: %d %s, want 409 saying why", status, body)
	}
	page = carol.page(b.URL + "/calls/" + urlCall.ID)
	if got := page.Find(`[data-testid="hand-on-refused"]`).Text(); got != store.URLModeHandOnMessage {
		t.Errorf("the URL-mode round's page says %q, want %q", got, store.URLModeHandOnMessage)
	}
	if page.Find(`#hand-on-to`).Length() != 0 {
		t.Error("the URL-mode round's page offers to hand it on")
	}
	if status, _ := carol.post(b.URL+"/calls/"+urlCall.ID+"/rounds/1/assign", url.Values{"to": {"ada"}}); status != http.StatusUnprocessableEntity {
		t.Errorf("the URL-mode round's form post hands it on: %d", status)
	}
}

// TestBrowserAwayAndHandOn, in headless Chromium at laptop and phone widths
// with axe-core on every page (no violation of any impact): a person sets
// herself away on her account page, which then says until when and who
// answers for her, and comes back; she hands a waiting round on from its
// page with the "Hand on to" form; and a URL-mode round's page says why it
// cannot be handed on.
func TestBrowserAwayAndHandOn(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	api := newClient(t, db)
	for _, width := range []int64{1280, 390} {
		t.Run(map[int64]string{1280: "Laptop", 390: "Phone"}[width], func(t *testing.T) {
			n := strconv.Itoa(int(width))
			ada, erin := "ada-"+n, "erin-"+n
			for _, name := range []string{ada, erin} {
				cli(t, db, "a long password\n", "user", "add", name)
			}
			j := newJourneyFor(t, browser, true, 5*time.Minute)
			j.emulate(width, "Europe/Lisbon")
			j.signInAs(inst.URL, ada, "a long password")

			j.do("open the account page", chromedp.Navigate(inst.URL+"/account"),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-away"]`)))
			j.axeZero("the account page, not away")
			j.do("name oneself as delegate",
				chromedp.SetValue(chromedp.ID("away-until"), "2031-05-04T09:00"),
				chromedp.SendKeys(chromedp.ID("away-delegate-input"), ada),
				chromedp.Click(chromedp.CSS(`button[data-testid="away-save"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="away-error"]`)),
			)
			if got := j.text(`[data-testid="away-error"]`); got != store.AwaySelfMessage {
				t.Errorf("the away error says %q, want %q", got, store.AwaySelfMessage)
			}
			j.axeZero("the account page with the away error")
			j.do("be away with a colleague",
				chromedp.SetValue(chromedp.ID("away-delegate-input"), erin),
				chromedp.Click(chromedp.CSS(`button[data-testid="away-save"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="away-delegate"]`)),
			)
			if got := j.text(`[data-testid="away-status"]`); !strings.Contains(got, "4 May 2031") && !strings.Contains(got, "2031") {
				t.Errorf("the away status says %q, want the date", got)
			}
			if got := j.text(`[data-testid="away-delegate"]`); got != erin {
				t.Errorf("the away status names %q, want %s", got, erin)
			}
			j.axeZero("the account page, away")
			j.do("come back", chromedp.Click(chromedp.CSS(`button[data-testid="away-end"]`)))
			j.eventually("the account page says ada is back",
				`document.querySelector('[data-testid="account-flash"]').textContent.includes("You are back")`, "", 30*time.Second)
			if j.text(`[data-testid="away-status"]`) == "" || evaluate[bool](j, "look for the delegate", `!!document.querySelector('[data-testid="away-delegate"]')`) {
				t.Error("the account page still says ada is away after she came back")
			}

			// A round given to ada: she hands it on to erin from its page.
			status, body := api.do("POST", inst.URL+"/api/v1/calls", "application/json",
				`{"server":"demo","tool":"book_flight","arguments":{},"assignee":"`+ada+`"}`)
			var call apiCall
			if status != http.StatusCreated || json.Unmarshal(body, &call) != nil {
				t.Fatalf("start: %d %s", status, body)
			}
			api.waitFor(inst.URL, call.ID, 30*time.Second, roundIs(1))
			j.do("open the round", chromedp.Navigate(inst.URL+"/calls/"+call.ID),
				chromedp.WaitVisible(chromedp.ID("hand-on-to")))
			j.axeZero("the round page with the hand-over form")
			j.do("hand it on to erin",
				chromedp.SendKeys(chromedp.ID("hand-on-to"), erin),
				chromedp.Click(chromedp.CSS(`button[data-testid="hand-on-submit"]`)),
				chromedp.WaitVisible(chromedp.CSS(`h1`)),
			)
			j.eventually("the round left ada's inbox", `location.pathname === "/inbox" && !document.querySelector('a[href="/calls/`+call.ID+`"]')`, "", 30*time.Second)
			var got answeredCall
			_, raw := api.do("GET", inst.URL+"/api/v1/calls/"+call.ID, "", "")
			if json.Unmarshal(raw, &got) != nil || got.Assignee != erin || got.Round == nil || got.Round.HandedOn == nil ||
				*got.Round.HandedOn != (handedOnJSON{From: ada, To: erin, By: ada}) {
				t.Errorf("after the page's hand-over the API says %s", raw)
			}

			// A URL-mode round of ada's own says why it stays hers.
			status, body = api.do("POST", inst.URL+"/api/v1/calls", "application/json",
				`{"server":"demo","tool":"connect_account","arguments":{},"assignee":"`+ada+`"}`)
			if status != http.StatusCreated || json.Unmarshal(body, &call) != nil {
				t.Fatalf("start: %d %s", status, body)
			}
			api.waitFor(inst.URL, call.ID, 30*time.Second, roundIs(1))
			j.do("open the URL-mode round", chromedp.Navigate(inst.URL+"/calls/"+call.ID),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="hand-on-refused"]`)))
			if got := j.text(`[data-testid="hand-on-refused"]`); got != store.URLModeHandOnMessage {
				t.Errorf("the URL-mode page says %q", got)
			}
			j.axeZero("the URL-mode round page")
		})
	}
}
