package journeys

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestEscalationAndDeadlineAcrossRestarts starts a call through the API
// that escalates to team leads after 2 s and is declined at its deadline
// (12 s), with two instances over one database. Before anyone answers, the
// round's page says both. Both instances are stopped while the escalation
// time passes, and started again: the round goes to the team once, bob
// (its member) is mailed, the webhook gets round.escalated, and the page
// says so. Both are stopped again while the deadline passes; started again,
// Rounds sends decline to the server, whose tool goes on ("Kept …"), and
// the audit log has one escalation and one decline at the deadline, and no
// expiry.
func TestEscalationAndDeadlineAcrossRestarts(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	rc := newReceiver(t)
	addrA, addrB := freeLoopback(t), freeLoopback(t)
	logs := &logSink{}
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "ROUND_TTL": "25s"}) // room between escalation and deadline for two restarts on a loaded machine
	start := func() (*instance, *instance) {
		return startInstance(t, db, withEnv(env, "LISTEN_ADDR", addrA), logs), startInstance(t, db, withEnv(env, "LISTEN_ADDR", addrB), logs)
	}
	stop := func(insts ...*instance) {
		for _, in := range insts {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			if err := in.Shutdown(ctx); err != nil {
				t.Logf("stopping an instance: %v", err)
			}
			cancel()
		}
	}
	a, b := start()
	cli(t, db, "a long password\n", "user", "add", "--email", "bob@example.com", "bob")
	cli(t, db, "", "team", "add", "leads")
	cli(t, db, "", "team", "member", "add", "leads", "bob")
	api := newClient(t, db)
	rc.secret = api.webhookSecret(a.URL)

	// Signed in first: on a loaded machine a sign-in can take longer than
	// the escalation's delay, and the page must be read before it falls due.
	api.login(b.URL, "admin", adminPassword)
	call := api.start(a.URL, `{"server":"demo","tool":"confirm_delete","arguments":{"path":"/tmp/report.txt"},
		"escalate_after":"4s","escalate_to":"team:leads","on_expiry":"decline","webhook_url":"`+rc.URL+`"}`)
	api.waitFor(a.URL, call.ID, 20*time.Second, roundIs(1))

	page := api.page(b.URL + "/calls/" + call.ID)
	if got := page.Find(`[data-testid="round-escalates"]`).Text(); !strings.Contains(got, "it goes to team leads") {
		t.Errorf("before anyone answers, the round's page says %q; want whom it escalates to", got)
	}
	if got := page.Find(`[data-testid="round-on-expiry"]`).Text(); !strings.Contains(got, "Rounds declines") {
		t.Errorf("before anyone answers, the round's page says %q; want that Rounds declines at the deadline", got)
	}

	// Down while the escalation falls due.
	stop(a, b)
	fallsDue(t, db, "round_escalate", call.ID)
	a, b = start()
	evs := rc.waitEvents(t, 2, 30*time.Second)
	if evs[1].Type != "round.escalated" || evs[1].Call.Assignee != "team:leads" {
		t.Errorf("second event = %s for %q; want round.escalated to team:leads", evs[1].Type, evs[1].Call.Assignee)
	}
	mb.waitMail(t, "bob@example.com", "asks you", 1, 30*time.Second)
	if got := api.page(a.URL + "/calls/" + call.ID).Find(`[data-testid="round-escalated"]`).Text(); !strings.Contains(got, "went to team leads") {
		t.Errorf("the round's page says %q; want that it went to team leads", got)
	}

	// Down while the deadline falls due.
	stop(a, b)
	fallsDue(t, db, "round_deadline", call.ID)
	a, b = start()
	done := api.waitFor(b.URL, call.ID, 40*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Kept /tmp/report.txt" {
		t.Errorf("after the deadline the call is %s with %s; want the tool to go on with decline (Kept /tmp/report.txt)", done.Status, done.Result)
	}
	counts := auditCounts(t, db, call.ID)
	if counts["round.escalated"] != 1 || counts["round.declined_at_deadline"] != 1 || counts["round.expired"] != 0 {
		t.Errorf("audit log for the call: %v; want one escalation, one decline at the deadline, no expiry", counts)
	}
	for _, ev := range rc.waitEvents(t, 3, 30*time.Second) {
		if ev.Type == "round.escalated" && ev.ID != evs[1].ID {
			t.Errorf("round.escalated posted twice: %s and %s", evs[1].ID, ev.ID)
		}
	}
}

// fallsDue waits until the call's job of kind is due by Postgres's clock.
func fallsDue(t *testing.T, db, kind, callID string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		var due bool
		queryRow(t, db, `select coalesce(bool_and(scheduled_at <= now()), false) from river_job
			where kind = $1 and args->>'call_id' = $2`, []any{kind, callID}, &due)
		if !due {
			return fmt.Errorf("the call's %s job is not due", kind)
		}
		return nil
	})
}

func auditCounts(t *testing.T, db, target string) map[string]int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `select action, count(*)::int from audit_log where target = $1 group by action`, target)
	out := map[string]int{}
	var action string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&action, &n}, func() error { out[action] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
