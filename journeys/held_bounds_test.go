package journeys

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcptest"
)

// TestHeldFractionalBoundsAndUnknownFormat: a question held on a
// 2025-11-25 session (FastMCP's ctx.elicit) with a fractional maximum
// ("maximum": 0.5, as the spec's erratum allows there) and a format of the
// server's own ("format": "multiline") works as on 2026-07-28: the page's
// number field takes fractions up to 0.5, the notes are a text field, an
// answer over the bound is refused with the bound, and 0.25 goes back to
// the server as given.
func TestHeldFractionalBoundsAndUnknownFormat(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	fake := mcptest.NewFake(t, mcptest.FastMCP4)
	fake.ListRateShare()
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + fake.URL}, nil)
	c := newClient(t, db)

	call := c.startWith(inst.URL, `{"server":"demo","tool":"rate_share","arguments":{},"protocol":"2025-11-25"}`)
	round := c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
	if !strings.Contains(string(round.Round.InputRequests["elicitation"]), `"maximum":0.5`) {
		t.Fatalf("the round's question = %s", round.Round.InputRequests["elicitation"])
	}

	c.login(inst.URL, "admin", adminPassword)
	page := c.page(inst.URL + "/calls/" + call.ID)
	share := page.Find(`input[name="q0.share"]`)
	if share.Length() != 1 {
		t.Fatalf("no field for the share on the round's page:\n%s", page.Find("main").Text())
	}
	for attr, want := range map[string]string{"type": "number", "min": "0", "max": "0.5", "step": "any"} {
		if got, _ := share.Attr(attr); got != want {
			t.Errorf("the share's field has %s=%q, want %q", attr, got, want)
		}
	}
	if page.Find(`[name="q0.notes"]`).Length() != 1 {
		t.Errorf("no field for the notes (format multiline)")
	}

	status, body := c.answer(inst.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"share":0.75,"notes":"too much"}}}`)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "0.5") {
		t.Errorf("a share of 0.75: %d %s; want 422 naming the bound 0.5", status, body)
	}
	status, body = c.answer(inst.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"share":0.25,"notes":"first line\nsecond line"}}}`)
	if status != http.StatusAccepted {
		t.Fatalf("a share of 0.25: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Share 0.25: first line\nsecond line" {
		t.Fatalf("call = %+v", done)
	}
	noViolations(t, fake)
}
