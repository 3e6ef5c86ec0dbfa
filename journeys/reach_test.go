package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/app"
)

// cli runs a management command against db.
func cli(t *testing.T, db, stdin string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db
		}
		return ""
	}
	if err := app.Command(context.Background(), args, strings.NewReader(stdin), &out, getenv); err != nil {
		t.Fatalf("web %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

// person is a client acting as one user through the API.
func person(t *testing.T, db, name string) *client {
	t.Helper()
	return &client{t: t, token: newToken(t, db, name)}
}

// webhookSecret reads the person's signing secret from GET /api/v1/me.
func (c *client) webhookSecret(base string) string {
	c.t.Helper()
	status, b := c.do("GET", base+"/api/v1/me", "", "")
	var me struct {
		WebhookSecret string `json:"webhook_secret"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &me) != nil || !strings.HasPrefix(me.WebhookSecret, "whsec_") {
		c.t.Fatalf("GET /api/v1/me: %d %s", status, b)
	}
	return me.WebhookSecret
}

func reachEnv(mb *mailbox, extra map[string]string) map[string]string {
	env := map[string]string{
		"SMTP_URL": mb.URL, "MAIL_FROM": "rounds@example.com", "WEBHOOK_ALLOW_PRIVATE": "true",
		"PUBLIC_URL": "https://rounds.example", "EXPIRY_INTERVAL": "500ms",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// addPeople adds ada and bob (both in team approvers) and carol, each with
// an address.
func addPeople(t *testing.T, db string) {
	t.Helper()
	for _, name := range []string{"ada", "bob", "carol"} {
		cli(t, db, "a long password\n", "user", "add", "--email", name+"@example.com", name)
	}
	cli(t, db, "", "team", "add", "approvers")
	cli(t, db, "", "team", "member", "add", "approvers", "ada")
	cli(t, db, "", "team", "member", "add", "approvers", "bob")
}

// TestAssigneeMailedAndWebhooks starts a call for ada on one instance with
// a webhook: ada, and only ada, is mailed once per round however many
// instances run, she answers on the other instance, everyone else gets a
// 404, and the receiver gets each event once, signed.
func TestAssigneeMailedAndWebhooks(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	rc := newReceiver(t)
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)})
	logs := &logSink{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	a := startInstance(t, db, env, logs)
	b := startInstance(t, db, env, logs)
	addPeople(t, db)
	admin, ada, bob, carol := newClient(t, db), person(t, db, "ada"), person(t, db, "bob"), person(t, db, "carol")
	cli(t, db, "", "user", "email", "admin", "admin@example.com")
	rc.secret = admin.webhookSecret(b.URL)
	var finishedID string
	rc.fail = func(id string, attempt int) bool {
		if attempt == 1 && finishedID == "" && len(rc.events) == 2 {
			finishedID = id // the third event: refused once, sent again 5 s later
		}
		return id == finishedID && attempt == 1
	}

	status, body := admin.do("POST", a.URL+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"book_flight","arguments":{},"assignee":"ada","webhook_url":"`+rc.URL+`"}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var call apiCall
	_ = json.Unmarshal(body, &call)
	ada.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))

	mails := mb.waitMail(t, "ada@example.com", "demo asks you", 1, 10*time.Second)
	m := mails[0]
	// The first question, in the server's order, and a word on the other.
	if !strings.Contains(m.Body, "How many people are travelling?") && !strings.Contains(m.Body, "Where and when do you want to fly?") {
		t.Errorf("the mail does not give the first question:\n%s", m.Body)
	}
	for _, want := range []string{"Server: demo", "Tool: book_flight", "(and 1 more question)",
		"https://rounds.example/calls/" + call.ID, "Answer by "} {
		if !strings.Contains(m.Body, want) {
			t.Errorf("the mail does not say %q:\n%s", want, m.Body)
		}
	}
	if m.From != "rounds@example.com" {
		t.Errorf("mail from %q", m.From)
	}
	for _, who := range []*client{bob, carol} {
		if status, _ := who.do("GET", a.URL+"/api/v1/calls/"+call.ID, "", ""); status != http.StatusNotFound {
			t.Errorf("someone else reads the call: %d", status)
		}
		if status, _ := who.answer(b.URL, call.ID, 1, tripAnswers); status != http.StatusNotFound {
			t.Errorf("someone else answers the call: %d", status)
		}
	}
	if status, body := ada.answer(b.URL, call.ID, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("ada answers round 1: %d %s", status, body)
	}
	ada.waitFor(a.URL, call.ID, 10*time.Second, roundIs(2))
	mb.waitMail(t, "ada@example.com", "demo asks you", 2, 10*time.Second)
	if status, _ := ada.do("POST", a.URL+"/api/v1/calls/"+call.ID+"/retry", "", ""); status != http.StatusNotFound {
		t.Errorf("the assignee may retry the caller's call: %d", status)
	}
	// An admin gives round 2 to carol: she is mailed, and ada loses the call.
	admin.login(b.URL, "admin", adminPassword)
	if status, body := admin.post(b.URL+"/admin/calls/"+call.ID+"/assignee", url.Values{"assignee": {"carol"}}); status != http.StatusSeeOther {
		t.Fatalf("reassign: %d %s", status, body)
	}
	mb.waitMail(t, "carol@example.com", "demo asks you", 1, 10*time.Second)
	if status, _ := ada.answer(a.URL, call.ID, 2, seatAnswers); status != http.StatusNotFound {
		t.Errorf("ada answers after the round went to carol: %d", status)
	}
	if status, body := carol.answer(a.URL, call.ID, 2, seatAnswers); status != http.StatusAccepted {
		t.Fatalf("carol answers round 2: %d %s", status, body)
	}
	done := admin.waitFor(b.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" {
		t.Fatalf("call = %+v", done)
	}

	evs := rc.waitEvents(t, 3, 30*time.Second)
	types := []string{}
	for i, ev := range evs {
		types = append(types, ev.Type+":"+ev.Call.Status)
		if want := []string{"ada", "ada", "carol"}[min(i, 2)]; ev.Call.ID != call.ID || ev.Call.Assignee != want {
			t.Errorf("event %d about %q for %q, want %q", i, ev.Call.ID, ev.Call.Assignee, want)
		}
		if bytes.Contains(ev.Raw, []byte("requestState")) {
			t.Errorf("an event carries the requestState: %s", ev.Raw)
		}
	}
	if strings.Join(types, " ") != "round.waiting:input_required round.waiting:input_required call.finished:complete" {
		t.Errorf("events = %v", types)
	}
	if evs[2].ID != finishedID || rc.attempts(finishedID) != 2 {
		t.Errorf("call.finished %s came as %s after %d attempts; want it sent again with the same id", finishedID, evs[2].ID, rc.attempts(finishedID))
	}
	// A duplicate would be a mail due now, on either instance: once every
	// mail due has gone, the count is final.
	jobsRun(t, db, "round_mail", "")
	if got := len(mb.to("ada@example.com")); got != 2 {
		t.Errorf("ada got %d mails for two rounds", got)
	}
	if n := mb.count(); n != 3 {
		t.Errorf("%d mails were sent, want ada's 2 and carol's 1: %+v", n, mb.msgs)
	}
	// The caller sees who answered each round.
	page := admin.page(a.URL + "/calls/" + call.ID)
	if got := page.Find(`[data-testid="answered-by"]`).Map(func(_ int, s *goquery.Selection) string { return s.Text() }); strings.Join(got, " ") != "ada carol" {
		t.Errorf("answered-by on the caller's page: %q", got)
	}
	// The audit log has the call's start, its reassignment and each
	// answer, who did it and for whom.
	audit := admin.page(a.URL + "/admin/audit?target=" + call.ID)
	var trail []string
	audit.Find(`tr[data-testid="audit-row"]`).Each(func(_ int, row *goquery.Selection) {
		cells := row.Find("td").Map(func(_ int, s *goquery.Selection) string { return strings.TrimSpace(s.Text()) })
		trail = append([]string{cells[2] + " by " + cells[1] + " " + cells[4]}, trail...) // oldest first
	})
	want := []struct{ action, actor, assignee string }{
		{"call.started", "admin", `"assignee": "ada"`},
		{"round.answered", "ada", `"assignee": "ada"`},
		{"admin.call.reassigned", "admin", `carol`},
		{"round.answered", "carol", `"assignee": "carol"`},
	}
	var got []string
	for _, line := range trail {
		if !strings.HasPrefix(line, "call.started") && !strings.HasPrefix(line, "round.") && !strings.HasPrefix(line, "admin.call.") {
			continue
		}
		got = append(got, line)
	}
	if len(got) != len(want) {
		t.Errorf("the call's audit trail is %q, want %d entries: start, answer, reassignment, answer", got, len(want))
	} else {
		for i, w := range want {
			if !strings.HasPrefix(got[i], w.action+" by "+w.actor+" ") || !strings.Contains(got[i], w.assignee) {
				t.Errorf("audit entry %d = %q, want %s by %s naming %s", i, got[i], w.action, w.actor, w.assignee)
			}
		}
	}
	if got := page.Find(`[data-testid="delivery"]`).Length(); got != 3 {
		t.Errorf("the delivery log lists %d events, want 3", got)
	}
}

// TestTeamRoundAnsweredOnce assigns a call to a team: every member is
// mailed, and reminded when a quarter of the time is left; both answer at
// once on two instances, one wins, the other is told who answered.
func TestTeamRoundAnsweredOnce(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	watch := &retryWatcher{}
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, watch.wrap), "ROUND_TTL": "30s"})
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	addPeople(t, db)
	admin, ada, bob, carol := newClient(t, db), person(t, db, "ada"), person(t, db, "bob"), person(t, db, "carol")

	status, body := admin.do("POST", a.URL+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"confirm_delete","arguments":{"path":"/tmp/report.txt"},"assignee":"team:approvers"}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var call apiCall
	_ = json.Unmarshal(body, &call)
	bob.waitFor(a.URL, call.ID, 10*time.Second, roundIs(1))
	// carol is not in the team: the call is as hidden from her as one that
	// does not exist, on every page and API route.
	carol.jar, _ = cookiejar.New(nil)
	carol.login(b.URL, "carol", "a long password")
	confirm := `{"confirm":{"action":"accept","content":{"confirm":true}}}`
	for what, status := range map[string]int{
		"reads the call (API)":   first(carol.do("GET", b.URL+"/api/v1/calls/"+call.ID, "", "")),
		"answers (API)":          first(carol.answer(a.URL, call.ID, 1, confirm)),
		"opens the call page":    first(carol.do("GET", b.URL+"/calls/"+call.ID, "", "")),
		"watches the call":       first(carol.do("GET", b.URL+"/calls/"+call.ID+"/live", "", "")),
		"answers (page)":         first(carol.post(a.URL+"/calls/"+call.ID+"/rounds/1", url.Values{"q0.confirm": {"on"}})),
		"saves a draft":          first(carol.post(a.URL+"/calls/"+call.ID+"/rounds/1/draft", url.Values{"q0.confirm": {"on"}})),
		"retries the call":       first(carol.post(a.URL+"/calls/"+call.ID+"/retry", url.Values{})),
		"cancels the call (API)": first(carol.do("POST", a.URL+"/api/v1/calls/"+call.ID+"/cancel", "", "")),
	} {
		if status != http.StatusNotFound {
			t.Errorf("carol, not in the team, %s: %d, want 404", what, status)
		}
	}
	bob.jar, _ = cookiejar.New(nil)
	bob.login(a.URL, "bob", "a long password")
	link := `a[href="/calls/` + call.ID + `"]`
	if bob.page(a.URL+"/inbox").Find(link).Length() == 0 {
		t.Errorf("bob's inbox does not list his team's round")
	}
	if carol.page(b.URL+"/inbox").Find(link).Length() != 0 {
		t.Errorf("carol's inbox lists the team's round")
	}
	mb.waitMail(t, "ada@example.com", "asks you", 1, 10*time.Second)
	mb.waitMail(t, "bob@example.com", "asks you", 1, 10*time.Second)
	// A quarter of 30 s is left 22.5 s after the round started; the answers
	// below have the last 7.5 s.
	mb.waitMail(t, "ada@example.com", "Reminder:", 1, 40*time.Second)
	mb.waitMail(t, "bob@example.com", "Reminder:", 1, 40*time.Second)

	statuses := make([]int, 2)
	bodies := make([][]byte, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, who := range []*client{ada, bob} {
		base := []string{a.URL, b.URL}[i]
		wg.Go(func() {
			<-start
			statuses[i], bodies[i] = who.answer(base, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`)
		})
	}
	close(start)
	wg.Wait()
	won, lost := 0, 1
	if statuses[1] == http.StatusAccepted {
		won, lost = 1, 0
	}
	if statuses[won] != http.StatusAccepted || statuses[lost] != http.StatusConflict {
		t.Fatalf("answers: %v %s %s", statuses, bodies[0], bodies[1])
	}
	winner := []string{"ada", "bob"}[won]
	if !strings.Contains(string(bodies[lost]), "already answered by "+winner) {
		t.Errorf("the other member is told %s", bodies[lost])
	}
	done := admin.waitFor(a.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" {
		t.Fatalf("call = %+v", done)
	}
	if n := watch.count(); n != 1 {
		t.Errorf("the server got %d retries, want 1", n)
	}
	// bob, whichever of the two he was, sees on the call page who answered.
	if got := strings.TrimSpace(bob.page(b.URL + "/calls/" + call.ID).Find(`[data-testid="answered-by"]`).Text()); got != winner {
		t.Errorf("bob's call page says the round was answered by %q, want %s", got, winner)
	}
	jobsRun(t, db, "round_mail", "")
	for _, addr := range []string{"ada@example.com", "bob@example.com"} {
		if n := len(mb.to(addr)); n != 2 {
			t.Errorf("%s got %d mails, want the round's and its reminder", addr, n)
		}
	}
	if n := len(mb.to("carol@example.com")) + len(mb.to("admin@example.com")); n != 0 {
		t.Errorf("people outside the team got %d mails", n)
	}
}

// TestHeldRoundReachesAssignee: a handshake-era server asks mid-call, on a
// session one instance holds; the question is a round like any other, so
// its assignee is mailed once per question and the webhook hears of it.
func TestHeldRoundReachesAssignee(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	rc := newReceiver(t)
	old := newOldServer(t)
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo[2025-11-25]=" + old.URL})
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	addPeople(t, db)
	admin, bob := newClient(t, db), person(t, db, "bob")
	rc.secret = admin.webhookSecret(a.URL)

	status, body := admin.do("POST", a.URL+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"ask_twice","arguments":{},"assignee":"bob","webhook_url":"`+rc.URL+`"}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var call apiCall
	_ = json.Unmarshal(body, &call)
	bob.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))
	first := mb.waitMail(t, "bob@example.com", "asks you", 1, 10*time.Second)
	if !strings.Contains(first[0].Body, "What is your name?") {
		t.Errorf("the mail does not give the question:\n%s", first[0].Body)
	}
	if status, body := bob.answer(b.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Bob"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer round 1: %d %s", status, body)
	}
	bob.waitFor(a.URL, call.ID, 10*time.Second, roundIs(2))
	second := mb.waitMail(t, "bob@example.com", "asks you", 2, 10*time.Second)
	if !strings.Contains(second[1].Body, "And your favourite colour, Bob?") {
		t.Errorf("the second mail does not give the question:\n%s", second[1].Body)
	}
	if status, body := bob.answer(a.URL, call.ID, 2, `{"elicitation":{"action":"accept","content":{"colour":"teal"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer round 2: %d %s", status, body)
	}
	evs := rc.waitEvents(t, 3, 20*time.Second)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type+":"+ev.Call.Status)
	}
	if strings.Join(types, " ") != "round.waiting:input_required round.waiting:input_required call.finished:complete" {
		t.Errorf("events = %v", types)
	}
	jobsRun(t, db, "round_mail", "")
	if n := mb.count(); n != 2 {
		t.Errorf("%d mails were sent, want bob's 2", n)
	}
}

// first is a response's status, without its body.
func first(status int, _ []byte) int { return status }

// TestReminderOnlyWhileWaiting: a round answered before a quarter of its
// time is left gets no reminder; the next round, left waiting, gets one,
// once, with two instances running.
func TestReminderOnlyWhileWaiting(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "ROUND_TTL": "30s"})
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	addPeople(t, db)
	admin, ada := newClient(t, db), person(t, db, "ada")
	status, body := admin.do("POST", a.URL+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"book_flight","arguments":{},"assignee":"ada"}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var call apiCall
	_ = json.Unmarshal(body, &call)
	ada.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))
	if status, body := ada.answer(b.URL, call.ID, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("ada answers round 1: %d %s", status, body)
	}
	ada.waitFor(a.URL, call.ID, 10*time.Second, roundIs(2))

	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Each round's reminder is due 22.5 s after it started; wait until both
	// jobs have run, on whichever instance.
	eventually(t, 60*time.Second, func() error {
		var done int
		if err := conn.QueryRow(context.Background(), `select count(*) from river_job where kind = 'round_mail'
			and args->>'call_id' = $1 and args->>'mail' = 'reminder' and state = 'completed'`, call.ID).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done != 2 {
			return fmt.Errorf("%d of the two reminder jobs ran", done)
		}
		return nil
	})
	var reminders, waiting int
	for _, m := range mb.to("ada@example.com") {
		if strings.HasPrefix(m.Subject, "Reminder: ") {
			reminders++
		} else {
			waiting++
		}
	}
	if waiting != 2 || reminders != 1 {
		t.Errorf("ada got %d mails about waiting rounds and %d reminders; want 2 and 1 (round 2's only)", waiting, reminders)
	}
	var remindedSeq int
	if err := conn.QueryRow(context.Background(), `select seq from round_mails where call_id = $1 and kind = 'reminder'`,
		call.ID).Scan(&remindedSeq); err != nil || remindedSeq != 2 {
		t.Errorf("the reminder sent was about round %d (%v), want round 2", remindedSeq, err)
	}
}
