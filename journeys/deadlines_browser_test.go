package journeys

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserRoundPlan sets, on a server's admin page in Chromium, that
// its rounds escalate to team leads after an hour and are cancelled at
// their deadline: a mistyped duration is refused beside the form with what
// was typed kept, the right one is saved. A call then started without
// settings of its own says on its round's page, before anyone answers,
// whom it goes to and when, and that Rounds cancels at the deadline. At
// laptop width with JavaScript, and at phone width without; axe-core
// finds nothing on either page.
func TestBrowserRoundPlan(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	cli(t, db, "", "team", "add", "leads")
	api := newClient(t, db)

	for _, width := range []int64{1280, 390} {
		t.Run(strconv.Itoa(int(width)), func(t *testing.T) {
			j := newJourneyFor(t, browser, width == 1280, 2*time.Minute)
			j.emulate(width, "Europe/Paris")
			j.signIn(inst.URL)
			form := `form[data-testid="server-deadlines"]`
			j.do("mistype the time to wait", chromedp.Navigate(inst.URL+"/admin/servers/demo"),
				chromedp.WaitVisible(chromedp.CSS(form)),
				chromedp.SetValue(chromedp.ID("escalate-after"), "0s"),
				chromedp.SetValue(chromedp.ID("escalate-to"), "team:leads"),
				chromedp.Click(chromedp.CSS(form+` input[value="cancel"]`)),
				chromedp.Click(chromedp.CSS(form+` button[data-testid="save-deadlines"]`)),
				chromedp.WaitVisible(chromedp.CSS(form+` [role="alert"]`)))
			if got := evaluate[string](j, "read the field", `document.getElementById("escalate-to").value`); got != "team:leads" {
				t.Errorf("after the refusal the form has %q, want what was typed", got)
			}
			j.axeZero("the server page refusing a duration")
			j.do("save", chromedp.SetValue(chromedp.ID("escalate-after"), "1h"),
				chromedp.Click(chromedp.CSS(form+` button[data-testid="save-deadlines"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="admin-notice"]`)))
			if got := evaluate[string](j, "read the field", `document.getElementById("escalate-after").value`); got != "1h" {
				t.Errorf("saved, the form says %q", got)
			}

			call := api.start(inst.URL, `{"server":"demo","tool":"confirm_delete","arguments":{"path":"/tmp/x"}}`)
			api.waitFor(inst.URL, call.ID, 20*time.Second, roundIs(1))
			j.do("open the round", chromedp.Navigate(inst.URL+"/calls/"+call.ID),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="round-plan"]`)))
			if got := j.text(`[data-testid="round-escalates"]`); !strings.Contains(got, "it goes to team leads") {
				t.Errorf("the round says %q", got)
			}
			if got := j.text(`[data-testid="round-on-expiry"]`); !strings.Contains(got, "Rounds cancels") {
				t.Errorf("the round says %q", got)
			}
			j.axeZero("a round that escalates and is cancelled at its deadline")
		})
	}
}
