package journeys

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserTeamSlackChannel: on the Teams page, at laptop and phone
// widths, with axe-core at zero, an admin reads a team's Slack channel
// and saves another, which the page shows after the save and Rounds
// keeps.
func TestBrowserTeamSlackChannel(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	w := newSlackWorld(t, false)
	a := w.start(t)
	for _, width := range []int64{1280, 390} {
		t.Run(map[int64]string{1280: "Laptop", 390: "Phone"}[width], func(t *testing.T) {
			team := "support-" + strconv.Itoa(int(width))
			runCLI(t, w.db, "team", "add", team)
			runCLI(t, w.db, "team", "channel", team, "C0OLD"+strconv.Itoa(int(width)))
			admin := newJourneyFor(t, browser, true, 3*time.Minute)
			admin.emulate(width, "Europe/Lisbon")
			admin.signIn(a.URL)
			field := `form[data-testid="team-slack"] input#slack-` + team
			admin.do("open the Teams page", chromedp.Navigate(a.URL+"/admin/teams"), chromedp.WaitVisible(chromedp.CSS(field)))
			if got := evaluate[string](admin, "read the channel", `document.querySelector('`+field+`').value`); got != "C0OLD"+strconv.Itoa(int(width)) {
				t.Errorf("the channel field = %q", got)
			}
			admin.axeZero("the Teams page with Slack on")
			evaluate[string](admin, "clear the channel", `document.querySelector('`+field+`').value = ""`)
			admin.do("save a new channel",
				chromedp.SendKeys(chromedp.ID("slack-"+team), "C0NEW"+strconv.Itoa(int(width))),
				chromedp.Click(chromedp.CSS(`form[data-testid="team-slack"]:has(#slack-`+team+`) button[type="submit"]`)),
			)
			admin.eventually("the page shows the new channel", `document.querySelector('`+field+`').value === "C0NEW`+strconv.Itoa(int(width))+`" && location.search.includes("done=saved")`, "", 30*time.Second)
			admin.axeZero("the Teams page after saving a channel")
			var channel string
			queryRow(t, w.db, `select slack_channel from teams where name = $1`, []any{team}, &channel)
			if !strings.HasPrefix(channel, "C0NEW") {
				t.Errorf("the stored channel = %q", channel)
			}
		})
	}
}
