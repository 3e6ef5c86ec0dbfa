package journeys

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/store"
)

// TestBrowserAgentCallPage: in Chromium at 1280 and 390 px, the page of a
// call an agent started, waiting for a person (the agent declared it
// cannot answer forms), says which agent asked, for whom, and that the
// agent is waiting for its owner; the page of one whose round the agent
// is asked says the owner may answer instead. Neither scrolls sideways,
// and axe-core finds nothing.
func TestBrowserAgentCallPage(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	waiting := agentCall(t, db, "admin", "build server", "confirm_delete", `{"path":"/tmp/x"}`,
		store.Agent{Name: "langgraph-worker", Version: "0.4", Protocol: "2025-11-25"})
	asked := agentCall(t, db, "admin", "laptop", "confirm_delete", `{"path":"/tmp/y"}`,
		store.Agent{Name: "claude-code", Version: "2.1", Protocol: "2026-07-28", Can: store.AgentCan{Form: true}})
	c.waitFor(inst.URL, waiting, 20*time.Second, roundIs(1))
	c.waitFor(inst.URL, asked, 20*time.Second, roundIs(1))

	j := newJourney(t, browser, true)
	j.signIn(inst.URL)
	for _, width := range []int64{1280, 390} {
		j.do("resize", chromedp.EmulateViewport(width, 844))
		for _, p := range []struct{ id, testid, says string }{
			{waiting, "agent-waiting", "langgraph-worker 0.4 is waiting for admin to answer."},
			{asked, "agent-asked", "Asked of claude-code 2.1; you can answer here instead."},
		} {
			what := fmt.Sprintf("the page of %s at %d px", p.testid, width)
			j.do("open "+what, chromedp.Navigate(inst.URL+"/calls/"+p.id),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="call-agent"]`)))
			if got := strings.TrimSpace(evaluate[string](j, "the notice on "+what,
				`document.querySelector('[data-testid="`+p.testid+`"]').textContent`)); got != p.says {
				t.Errorf("%s says %q, want %q", what, got, p.says)
			}
			if got := evaluate[string](j, "who started "+what, `document.querySelector('[data-testid="call-agent"]').textContent`); !strings.Contains(got, "on behalf of") {
				t.Errorf("%s names the agent as %q", what, got)
			}
			if w := evaluate[int64](j, "width of "+what, `document.documentElement.scrollWidth`); w > width {
				t.Errorf("%s scrolls sideways: %d px wide", what, w)
			}
			j.axeZero(what)
		}
	}
}
