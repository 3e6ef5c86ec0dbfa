package journeys

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chartSeen is what the browser shows of one chart.
type chartSeen struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	Desc     string    `json:"desc"`
	Labelled bool      `json:"labelled"` // aria-labelledby names the title and desc
	Width    float64   `json:"width"`
	Bars     int       `json:"bars"`
	Rows     int       `json:"rows"`
	Sums     []float64 `json:"sums"` // per data column of the table
}

// TestBrowserAdminDashboard signs in as an admin in Chromium, opens the
// dashboard, and finds each chart drawn, titled, described, and with a
// table of the same numbers beside it: among them time to answer by server
// and by team, and the rounds that escalated.
func TestBrowserAdminDashboard(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	cli(t, db, "", "team", "add", "approvers")
	cli(t, db, "", "team", "member", "add", "approvers", "admin")
	for _, answer := range []string{"accept", "accept", "decline", ""} {
		call := c.startCall(inst.URL, "approve", `{}`)
		c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
		if answer != "" {
			c.answer(inst.URL, call.ID, 1, `{"approval":{"action":"`+answer+`"}}`)
		}
	}
	// One round answered by a team, and one that escalates to it.
	team := c.start(inst.URL, `{"server":"demo","tool":"approve","arguments":{},"assignee":"team:approvers"}`)
	c.waitFor(inst.URL, team.ID, 10*time.Second, roundIs(1))
	c.answer(inst.URL, team.ID, 1, `{"approval":{"action":"accept"}}`)
	late := c.start(inst.URL, `{"server":"demo","tool":"approve","arguments":{},"escalate_after":"1s","escalate_to":"team:approvers"}`)
	c.waitFor(inst.URL, late.ID, 10*time.Second, roundIs(1))
	waitAssignee(t, db, late.ID, "team:approvers", 30*time.Second)

	tab := newTab(t, browser, true)
	tab.do("open the dashboard", chromedp.Navigate(inst.URL+"/admin"))
	tab.do("sign in",
		chromedp.SendKeys(chromedp.ID("username"), "admin"),
		chromedp.SendKeys(chromedp.ID("password"), adminPassword),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
	)
	tab.do("wait for the charts", chromedp.WaitVisible(chromedp.CSS(`figure[data-testid="chart-pending-age"] svg`)))
	if got := tab.text(`[data-testid="summary-pending"]`); got != "2" {
		t.Errorf("rounds waiting = %q, want 2", got)
	}

	ctx, cancel := context.WithTimeout(tab.ctx, stepTimeout)
	defer cancel()
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartSeen](`[...document.querySelectorAll("figure.chart")].map(f => {
		const svg = f.querySelector("svg[role=img]");
		const title = svg.querySelector(":scope > title"), desc = svg.querySelector(":scope > desc");
		const ids = (svg.getAttribute("aria-labelledby") || "").split(" ");
		const rows = [...f.querySelectorAll("table.chart-data tbody tr")];
		const sums = [];
		rows.forEach(r => [...r.querySelectorAll("td")].forEach((td, i) => { sums[i] = (sums[i] || 0) + parseFloat(td.textContent); }));
		return {
			id: f.dataset.testid.replace("chart-", ""),
			title: title ? title.textContent : "", desc: desc ? desc.textContent : "",
			labelled: !!title && !!desc && ids.includes(title.id) && ids.includes(desc.id),
			width: svg.getBoundingClientRect().width,
			bars: svg.querySelectorAll(".chart-bars rect").length,
			rows: rows.length, sums: sums,
		};
	})`))
	if err != nil {
		t.Fatalf("read the charts: %v", err)
	}

	want := map[string]struct {
		rows int
		sums []float64
	}{
		"rounds-per-hour": {1, []float64{3, 1, 0, 0, 4}}, // the one hour with rounds: answered, declined, cancelled, expired, total
		"time-to-answer":  {7, []float64{4}},
		"server-rates":    {1, []float64{25, 0}}, // one server: 1 of 4 declined
		"pending-age":     {6, []float64{2}},
		"speed-by-server": {1, nil},                // demo (4): median and 90th percentile
		"speed-by-team":   {1, nil},                // approvers (1)
		"unanswered":      {1, []float64{1, 0, 0}}, // demo: one escalated
	}
	if len(charts) != len(want) {
		t.Fatalf("%d charts on the dashboard, want %d: %+v", len(charts), len(want), charts)
	}
	for _, ch := range charts {
		w, ok := want[ch.ID]
		if !ok {
			t.Errorf("unexpected chart %q", ch.ID)
			continue
		}
		if ch.Title == "" || ch.Desc == "" || !ch.Labelled {
			t.Errorf("%s: title %q, desc %q, labelled %v; want both, named by aria-labelledby", ch.ID, ch.Title, ch.Desc, ch.Labelled)
		}
		if ch.Width < 200 || (ch.Bars == 0 && w.sums != nil) {
			t.Errorf("%s: drawn %vpx wide with %d bars", ch.ID, ch.Width, ch.Bars)
		}
		if w.sums == nil { // times taken: only their number is known
			if ch.Rows != w.rows || len(ch.Sums) != 2 || ch.Sums[0] > ch.Sums[1] {
				t.Errorf("%s: table of %d rows with %v; want %d rows of a median no more than the 90th percentile", ch.ID, ch.Rows, ch.Sums, w.rows)
			}
			continue
		}
		rowsOK := ch.Rows == w.rows
		if ch.ID == "rounds-per-hour" { // the rounds may straddle an hour
			rowsOK = ch.Rows == 1 || ch.Rows == 2
		}
		if !rowsOK || !sameSums(ch.Sums, w.sums) {
			t.Errorf("%s: table of %d rows summing to %v, want %d rows summing to %v", ch.ID, ch.Rows, ch.Sums, w.rows, w.sums)
		}
	}
	for _, ch := range charts {
		if ch.ID == "speed-by-server" && !strings.Contains(ch.Desc, "over 4 rounds") {
			t.Errorf("time to answer by server says %q, want it counted over the 4 rounds people answered", ch.Desc)
		}
	}
	if desc := charts[0].Desc; !strings.Contains(desc, "3 answered, 1 declined") {
		t.Errorf("the first chart's description does not give its numbers: %q", desc)
	}
}

func sameSums(got, want []float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if d := got[i] - want[i]; d > 0.05 || d < -0.05 {
			return false
		}
	}
	return true
}
