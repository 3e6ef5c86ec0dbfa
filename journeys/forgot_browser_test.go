package journeys

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/mcptest"
)

// TestBrowserAnswerAfterServerForgot: FastMCP 4 servers whose rounds'
// state runs out while the person thinks. In Chromium at laptop and phone widths a
// person starts book_flight on instance A, answers its first round, and
// answers the second on instance B after the state ran out and after the
// instances' request timeout and heartbeat. On the laptop the server asks
// the same again: Rounds gives the answers again, the call completes, and
// the page's history says in words what happened; so does the API. On the
// phone the fare moved: the round that changed is the person's to answer,
// with their earlier date filled in.
func TestBrowserAnswerAfterServerForgot(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	fakes := map[int64]*mcptest.Fake{1280: mcptest.NewFake(t, mcptest.FastMCP4), 390: mcptest.NewFake(t, mcptest.FastMCP4)}
	fakes[390].MoveFares()
	env := map[string]string{"MCP_SERVERS": "laptop=" + fakes[1280].URL + ",phone=" + fakes[390].URL,
		"MCP_REQUEST_TIMEOUT": "1s", "HEARTBEAT_INTERVAL": "500ms"}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	api := newClient(t, db)

	for _, width := range []int64{1280, 390} {
		server := map[int64]string{1280: "laptop", 390: "phone"}[width]
		t.Run(server, func(t *testing.T) {
			j := newJourneyFor(t, browser, true, 4*time.Minute)
			j.emulate(width, "Europe/Lisbon")
			j.signIn(a.URL)
			j.within("start book_flight on A",
				chromedp.Navigate(a.URL+"/servers/"+server+"/tools/book_flight"),
				chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[name="q0.destination"]`)),
				chromedp.SendKeys(chromedp.CSS(`[name="q0.destination"]`), "Lisbon"),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[name="q0.date"]`)),
			)
			loc := evaluate[string](j, "location", `location.pathname`)
			id := strings.TrimPrefix(loc, "/calls/")
			time.Sleep(2500 * time.Millisecond) // past every timeout of ours
			fakes[width].Expire()               // and the server's state has run out
			j.within("answer the date on B",
				chromedp.Navigate(b.URL+loc),
				chromedp.WaitVisible(chromedp.CSS(`[name="q0.date"]`)),
				chromedp.SetValue(chromedp.CSS(`[name="q0.date"]`), "2031-05-04"),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			)
			if server == "phone" {
				j.within("wait for the round that changed",
					chromedp.WaitVisible(chromedp.CSS(`[data-testid="changed-since"]`)))
				if got := j.text(`form[data-testid="round-form"]`); !strings.Contains(got, "Fares from €435.") {
					t.Errorf("the round that changed reads %q", got)
				}
				if got := evaluate[string](j, "the date filled in", `document.querySelector('[name="q0.date"]').value`); got != "2031-05-04" {
					t.Errorf("the date is filled in with %q, want the earlier answer", got)
				}
				j.fits("the round that changed", width)
				j.axe("the round that changed")
				j.within("send the date again", chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)))
			}
			j.within("wait for the result", chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)))
			if got := j.text(`[data-testid="result-text"]`); got != "Booked a flight to Lisbon on 2031-05-04" {
				t.Errorf("result = %q", got)
			}
			refused := j.text(`[data-testid="state-refused"]`)
			for _, want := range []string{"it no longer knew the question", "seconds after it was asked", "Rounds asked the server afresh"} {
				if !strings.Contains(refused, want) {
					t.Errorf("the history says %q; want it to say %q", refused, want)
				}
			}
			again := evaluate[int](j, "rounds answered again", `document.querySelectorAll('[data-testid="answered-again"]').length`)
			if want := map[string]int{"laptop": 2, "phone": 1}[server]; again != want {
				t.Errorf("%d rounds say they were answered again, want %d", again, want)
			}
			j.fits("the call's history", width)
			j.axe("the call's history")

			status, body := api.do("GET", a.URL+"/api/v1/calls/"+id, "", "")
			var call struct {
				Status      string `json:"status"`
				AskedAfresh int    `json:"askedAfresh"`
				Rounds      []struct {
					Seq               int        `json:"seq"`
					StateRefusedAt    *time.Time `json:"stateRefusedAt"`
					AnsweredAgainFrom int        `json:"answeredAgainFrom"`
				} `json:"rounds"`
			}
			if err := json.Unmarshal(body, &call); status != 200 || err != nil {
				t.Fatalf("GET the call: %d %s", status, body)
			}
			if call.Status != "complete" || call.AskedAfresh != 1 || len(call.Rounds) != 4 ||
				call.Rounds[1].StateRefusedAt == nil || call.Rounds[2].AnsweredAgainFrom != 1 {
				t.Errorf("the API says %s", body)
			}
			if strings.Contains(string(body), "requestState") || strings.Contains(string(body), "v1.") {
				t.Errorf("the API's call holds the server's state: %s", body)
			}
		})
	}

	// The admin's server page says how long the server's questions last,
	// measured from what it forgot; switched off, the server's next
	// forgotten question stops the call with a sentence.
	admin := newClient(t, db)
	admin.login(b.URL, "admin", adminPassword)
	_, page := admin.do("GET", b.URL+"/admin/servers/laptop", "", "")
	for _, want := range []string{`data-testid="state-life"`, "the server had forgotten the questions of 1", " seconds after asking it", `name="replay" value="1" checked`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the laptop server's page does not say %q", want)
		}
	}
	if status, body := admin.post(b.URL+"/admin/servers/laptop", url.Values{"url": {fakes[1280].URL}, "replay_form": {"1"}}); status != http.StatusSeeOther {
		t.Fatalf("switching replay off: %d %s", status, body)
	}
	if _, page = admin.do("GET", b.URL+"/admin/servers/laptop", "", ""); strings.Contains(string(page), `name="replay" value="1" checked`) {
		t.Error("replay is still on after switching it off")
	}
	status, created := api.do("POST", a.URL+"/api/v1/calls", "application/json", `{"server":"laptop","tool":"book_flight","arguments":{}}`)
	var call apiCall
	if err := json.Unmarshal(created, &call); status != http.StatusCreated || err != nil {
		t.Fatalf("start on laptop: %d %s", status, created)
	}
	api.waitFor(a.URL, call.ID, 10*time.Second, roundIs(1))
	api.answer(a.URL, call.ID, 1, `{"destination":{"action":"accept","content":{"destination":"Lisbon"}}}`)
	api.waitFor(a.URL, call.ID, 10*time.Second, roundIs(2))
	time.Sleep(2500 * time.Millisecond)
	fakes[1280].Expire()
	api.answer(b.URL, call.ID, 2, `{"date":{"action":"accept","content":{"date":"2031-05-04"}}}`)
	failed := api.waitFor(b.URL, call.ID, 10*time.Second, func(c apiCall) bool { return c.Status == "failed" })
	if failed.Error == nil || !strings.Contains(failed.Error.Message, "not to give answers again to this server") {
		t.Errorf("with replay off the call ends with %+v", failed.Error)
	}
}
