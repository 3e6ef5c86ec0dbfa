package journeys

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/slack"
	"github.com/mcp-rounds/rounds/store"
)

// More Slack journeys: a form over Slack's limits, the rounds that end
// without an answer (expired, escalated), and a team's channel as an
// admin sets it.

// atlasServer is a handshake-era MCP server whose pick_city asks for one
// city of 150: a single choice over Slack's 100 options of a select.
func atlasServer(t *testing.T) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "atlas", Version: "1"}, nil)
	// A question nobody answers must not outlive the test (see newOldServer).
	life, stop := context.WithCancel(context.Background())
	cities := make([]string, 150)
	for i := range cities {
		cities[i] = fmt.Sprintf("City %d", i+1)
	}
	mcp.AddTool(server, &mcp.Tool{Name: "pick_city", Description: "Asks for one city of 150, mid-call."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer context.AfterFunc(life, cancel)()
			defer cancel()
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Which city should the report cover?",
				RequestedSchema: map[string]any{"type": "object", "required": []string{"city"},
					"properties": map[string]any{"city": map[string]any{"type": "string", "title": "City", "enum": cities}}}})
			if err != nil {
				return nil, nil, err
			}
			city, _ := res.Content["city"].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + ": " + city}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	t.Cleanup(stop) // runs first
	return srv.URL
}

// noButtons fails when an ended message still has a button of a round.
func noButtons(t *testing.T, blocks []any) {
	t.Helper()
	for _, action := range []string{slack.ActionAnswer, slack.ActionDecline, slack.ActionYes, slack.ActionOpen} {
		if strings.Contains(fmt.Sprint(blocks), action) {
			t.Errorf("the ended message still has %s: %v", action, blocks)
		}
	}
}

// TestSlackFormOverLimits: a server asks, mid-call, for one city of 150,
// more options than a Slack select takes. The message offers Open in
// Rounds (the round's page) and no Answer, and says why; nothing breaks
// Block Kit's limits. Answered in Rounds, the message says by whom, its
// buttons gone.
func TestSlackFormOverLimits(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	w.env["MCP_SERVERS"] = "demo[2025-11-25]=" + atlasServer(t)
	a := w.start(t)
	call := w.startFor(a.URL, "pick_city", "team:ops")
	m := w.message(t, opsRoom)
	if got := buttonURL(m.Blocks, slack.ActionOpen); got != a.URL+"/calls/"+call.ID {
		t.Errorf("Open in Rounds = %q, want the round's page", got)
	}
	blocks := fmt.Sprint(m.Blocks)
	if strings.Contains(blocks, slack.ActionAnswer) || strings.Contains(blocks, slack.ActionChoosePrefix) {
		t.Errorf("a form over Slack's limits got an Answer or choice buttons: %v", m.Blocks)
	}
	if !strings.Contains(blocks, "Answer this in Rounds") {
		t.Errorf("the message does not say to answer in Rounds: %v", m.Blocks)
	}
	w.noViolations(t)

	w.c.waitFor(a.URL, call.ID, 10*time.Second, roundIs(1))
	if status, body := w.c.answer(a.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"city":"City 142"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := w.c.waitFor(a.URL, call.ID, 15*time.Second, isDone)
	if got := resultText(t, done.Result); got != "accept: City 142" {
		t.Errorf("result = %q", got)
	}
	up := w.updated(t, m)
	if !strings.Contains(up.Text, "Answered by admin") {
		t.Errorf("updated message = %q", up.Text)
	}
	noButtons(t, up.Blocks)
	w.noViolations(t)
}

// TestSlackRoundExpires: a posted round nobody answers expires at its
// deadline; its message says so, its buttons gone, and a late press, by
// Ada or by Bob whom Rounds does not know, is told the round expired.
func TestSlackRoundExpires(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	w.env["EXPIRY_INTERVAL"] = "300ms"
	a := w.start(t)
	call := w.startFor(a.URL, "confirm_delete", "team:ops")
	m := w.message(t, opsRoom)
	var n int
	queryRow(t, w.db, `with d as (update rounds set expires_at = now() where call_id = $1 and seq = 1 returning 1)
		select count(*)::int from d`, []any{call.ID}, &n)
	if n != 1 {
		t.Fatalf("%d rounds brought to their deadline", n)
	}
	up := w.updated(t, m)
	if !strings.Contains(up.Text, "Expired") || !strings.Contains(fmt.Sprint(up.Blocks), "Expired at") {
		t.Errorf("updated message = %q %v", up.Text, up.Blocks)
	}
	noButtons(t, up.Blocks)
	w.press(t, a, adaSlack, m, slack.ActionYes)
	w.ephemeral(t, adaSlack, store.RoundExpiredMessage)
	// Bob, whom Rounds does not know, learns it too, not to link first.
	w.press(t, a, bobSlack, m, slack.ActionYes)
	w.ephemeral(t, bobSlack, store.RoundExpiredMessage)
	w.noViolations(t)
}

// TestSlackRoundEscalates: a round for team ops nobody answers in time
// escalates to team leads: the ops channel's message says where it went,
// its buttons gone; the leads' channel gets the round with its buttons;
// Ada (of ops) pressing the old message is told whose it is now.
func TestSlackRoundEscalates(t *testing.T) {
	t.Parallel()
	const leadsRoom = "C0LEADS"
	w := newSlackWorld(t, false)
	w.fake.AddChannel(leadsRoom)
	a := w.start(t)
	runCLI(t, w.db, "team", "add", "leads")
	runCLI(t, w.db, "team", "channel", "leads", leadsRoom)
	status, b := w.c.do("POST", a.URL+"/api/v1/calls", "application/json", `{"server":"demo","tool":"confirm_delete",
		"arguments":{"path":"/tmp/report.txt"},"assignee":"team:ops","escalate_after":"1h","escalate_to":"team:leads"}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, b)
	}
	var call apiCall
	if err := json.Unmarshal(b, &call); err != nil {
		t.Fatal(err)
	}
	id := call.ID
	m := w.message(t, opsRoom)

	// The hour passes.
	var n int
	queryRow(t, w.db, `with r as (update rounds set escalate_at = now() where call_id::text = $1 and seq = 1 returning 1),
		j as (update river_job set scheduled_at = now() where kind = 'round_escalate' and args->>'call_id' = $1 returning 1)
		select (select count(*) from r)::int + (select count(*) from j)::int`, []any{id}, &n)
	if n != 2 {
		t.Fatalf("%d rows brought to the escalation, want the round and its job", n)
	}
	up := w.updated(t, m)
	if !strings.Contains(up.Text, "Escalated to team:leads") {
		t.Errorf("the old message = %q", up.Text)
	}
	noButtons(t, up.Blocks)
	leads := w.message(t, leadsRoom)
	if !strings.Contains(fmt.Sprint(leads.Blocks), slack.ActionYes) || buttonURL(leads.Blocks, slack.ActionOpen) == "" {
		t.Errorf("the leads' message has no buttons: %v", leads.Blocks)
	}
	w.press(t, a, adaSlack, m, slack.ActionYes)
	w.ephemeral(t, adaSlack, "This question is for the team leads.")
	if got := w.c.waitFor(a.URL, id, 5*time.Second, roundIs(1)); got.Status != "input_required" {
		t.Errorf("the old message's button answered: %+v", got)
	}
	w.noViolations(t)
}

// TestSlackTeamChannelAdmin: the Teams page shows a team's channel and
// saves a new one, where its next round is posted; a wrong id is refused
// with a sentence; `web team channel ops ”` clears it, and the next round
// is posted nowhere.
func TestSlackTeamChannelAdmin(t *testing.T) {
	t.Parallel()
	const newRoom = "C0NEW"
	w := newSlackWorld(t, false)
	w.fake.AddChannel(newRoom)
	a := w.start(t)
	admin := &client{t: t}
	admin.jar, _ = cookiejar.New(nil)
	admin.login(a.URL, "admin", adminPassword)
	field := func() string {
		t.Helper()
		v, ok := admin.page(a.URL + "/admin/teams").Find(`form[data-testid="team-slack"] input#slack-ops`).Attr("value")
		if !ok {
			t.Fatal("the Teams page has no Slack channel field for ops")
		}
		return v
	}
	if got := field(); got != opsRoom {
		t.Errorf("the ops channel field = %q, want %s", got, opsRoom)
	}
	if status, body := admin.post(a.URL+"/admin/teams/ops/slack", url.Values{"channel": {" " + newRoom + " "}}); status != http.StatusSeeOther {
		t.Fatalf("save the channel: %d %s", status, body)
	}
	if got := field(); got != newRoom {
		t.Errorf("after saving, the field = %q, want %s", got, newRoom)
	}
	w.startFor(a.URL, "confirm_delete", "team:ops")
	w.message(t, newRoom)

	status, body := admin.post(a.URL+"/admin/teams/ops/slack", url.Values{"channel": {"#general"}})
	if status == http.StatusSeeOther || !strings.Contains(string(body), "A Slack channel id starts with C or G") {
		t.Errorf("a wrong channel id: %d, want it refused with a sentence", status)
	}
	if got := field(); got != newRoom {
		t.Errorf("after a refused id, the field = %q, want %s", got, newRoom)
	}

	if out := runCLI(t, w.db, "team", "channel", "ops", ""); !strings.Contains(out, "posted to no Slack channel") {
		t.Errorf("web team channel ops '': %q", out)
	}
	if got := field(); got != "" {
		t.Errorf("after clearing, the field = %q", got)
	}
	call := w.startFor(a.URL, "confirm_delete", "team:ops")
	eventually(t, 15*time.Second, func() error {
		var state string
		queryRow(t, w.db, `select coalesce(max(state::text), 'none') from river_job where kind = 'slack_post' and args->>'call_id' = $1`,
			[]any{call.ID}, &state)
		if state != "completed" {
			return fmt.Errorf("the round's post job is %s", state)
		}
		return nil
	})
	if got := len(w.fake.Messages()); got != 1 {
		t.Errorf("%d messages in Slack, want the first round's only", got)
	}
}
