package journeys

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/slack"
	"github.com/mcp-rounds/rounds/slack/slackfake"
)

// The Slack journeys: two instances over one database, the demo server,
// and a fake Slack written from Slack's documentation (slack/slackfake).

// slackWorld is a workspace with Ada (on team ops, whose channel is
// C0OPS) and Bob (on no team), and the instances around it.
type slackWorld struct {
	db      string
	fake    *slackfake.Fake
	retries *retryWatcher
	env     map[string]string
	c       *client
}

const (
	adaSlack = "U0ADA"
	bobSlack = "U0BOB"
	opsRoom  = "C0OPS"
)

// newSlackWorld makes the workspace, its people in Rounds (Ada's address
// set by an admin, so trusted; Bob's too) and the settings of an instance
// that posts to the fake. socket takes interactions over Socket Mode.
func newSlackWorld(t *testing.T, socket bool) *slackWorld {
	t.Helper()
	w := &slackWorld{db: newDatabase(t), fake: slackfake.New(t), retries: &retryWatcher{}}
	w.fake.AddUser(slackfake.User{ID: adaSlack, Name: "ada", Email: "ada@example.com"})
	w.fake.AddUser(slackfake.User{ID: bobSlack, Name: "bob", Email: "bob@elsewhere.example"})
	w.fake.AddChannel(opsRoom)
	w.env = map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, w.retries.wrap),
		"MCP_REQUEST_TIMEOUT": "1s", "HEARTBEAT_INTERVAL": "200ms",
		"SLACK_BOT_TOKEN": slackfake.BotToken, "SLACK_API_URL": w.fake.APIURL()}
	if socket {
		w.env["SLACK_APP_TOKEN"] = slackfake.AppToken
	} else {
		w.env["SLACK_SIGNING_SECRET"] = slackfake.SigningSecret
	}
	return w
}

// start starts an instance that takes interactions on its own URL.
func (w *slackWorld) start(t *testing.T) *instance {
	t.Helper()
	in := startInstance(t, w.db, w.env, nil)
	if w.c == nil { // the first start made the admin; the people come next
		w.c = newClient(t, w.db)
		addUser(t, w.db, "ada", adminPassword)
		addUser(t, w.db, "bob", adminPassword)
		runCLI(t, w.db, "user", "email", "ada", "ada@example.com") // set by an admin: trusted
		runCLI(t, w.db, "user", "email", "bob", "bob@example.com") // not the address Slack has for him
		runCLI(t, w.db, "team", "add", "ops")
		runCLI(t, w.db, "team", "member", "add", "ops", "ada")
		if out := runCLI(t, w.db, "team", "channel", "ops", opsRoom); !strings.Contains(out, opsRoom) {
			t.Fatalf("web team channel: %s", out)
		}
	}
	return in
}

// startFor starts a call of the demo's tool assigned to assignee.
func (w *slackWorld) startFor(base, tool, assignee string) apiCall {
	args := "{}"
	if tool == "confirm_delete" {
		args = `{"path":"/tmp/report.txt"}`
	}
	w.c.t.Helper()
	status, b := w.c.do("POST", base+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"`+tool+`","arguments":`+args+`,"assignee":"`+assignee+`"}`)
	if status != http.StatusCreated {
		w.c.t.Fatalf("start %s: %d %s", tool, status, b)
	}
	var call apiCall
	if err := json.Unmarshal(b, &call); err != nil {
		w.c.t.Fatal(err)
	}
	return call
}

// message waits for the round's message in channel.
func (w *slackWorld) message(t *testing.T, channel string) slackfake.Message {
	t.Helper()
	var got slackfake.Message
	eventually(t, 15*time.Second, func() error {
		for _, m := range w.fake.Messages() {
			if m.Channel == channel {
				got = m
				return nil
			}
		}
		return fmt.Errorf("no message in %s; calls: %+v", channel, w.fake.Calls())
	})
	return got
}

// updated waits for the message to be updated, and returns it.
func (w *slackWorld) updated(t *testing.T, m slackfake.Message) slackfake.Message {
	t.Helper()
	var got slackfake.Message
	eventually(t, 15*time.Second, func() error {
		for _, x := range w.fake.Messages() {
			if x.Channel == m.Channel && x.TS == m.TS && x.Updated > 0 {
				got = x
				return nil
			}
		}
		return fmt.Errorf("message %s not updated", m.TS)
	})
	return got
}

// send sends an interaction to an instance, signed as Slack signs it.
func (w *slackWorld) send(t *testing.T, to *instance, p slackfake.Payload) *slackfake.Sent {
	t.Helper()
	w.fake.InteractionURL = to.URL + "/slack/interactions"
	sent, err := w.fake.Send(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Status != http.StatusOK {
		t.Fatalf("interaction: %d %s", sent.Status, sent.Body)
	}
	return sent
}

// press presses a button of a message as a Slack user.
func (w *slackWorld) press(t *testing.T, to *instance, user string, m slackfake.Message, action string) *slackfake.Sent {
	t.Helper()
	p, err := w.fake.Press(user, m, action)
	if err != nil {
		t.Fatal(err)
	}
	return w.send(t, to, p)
}

// view waits for the n-th modal opened.
func (w *slackWorld) view(t *testing.T, n int) slackfake.View {
	t.Helper()
	var got slackfake.View
	eventually(t, 10*time.Second, func() error {
		vs := w.fake.Views()
		if len(vs) < n {
			return fmt.Errorf("%d views opened; calls: %+v", len(vs), w.fake.Calls("views.open"))
		}
		got = vs[n-1]
		return nil
	})
	return got
}

// ephemeral waits for an ephemeral message to user that contains text.
func (w *slackWorld) ephemeral(t *testing.T, user, text string) slackfake.Ephemeral {
	t.Helper()
	var got slackfake.Ephemeral
	eventually(t, 10*time.Second, func() error {
		var seen []string
		for _, e := range w.fake.Ephemerals() {
			if e.User == user && strings.Contains(e.Text, text) {
				got = e
				return nil
			}
			seen = append(seen, e.Text)
		}
		return fmt.Errorf("no ephemeral %q for %s; seen %q", text, user, seen)
	})
	return got
}

func (w *slackWorld) noViolations(t *testing.T) {
	t.Helper()
	if v := w.fake.Violations(); len(v) > 0 {
		t.Errorf("Block Kit violations: %+v", v)
	}
}

// TestSlackModalOnTheOtherInstance: a round for team ops is posted to its
// channel; Ada presses Answer on instance A (views.open), and half a
// minute later, long after every request timeout, submits the modal to
// instance B. The call goes on, the message says who answered, and the
// server got exactly one retry.
func TestSlackModalOnTheOtherInstance(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	a, b := w.start(t), w.start(t)
	call := w.startFor(a.URL, "collect_user_info", "team:ops")
	m := w.message(t, opsRoom)
	if !strings.Contains(m.Text, "Introduce yourself") {
		t.Errorf("message text = %q", m.Text)
	}
	w.press(t, a, adaSlack, m, slack.ActionAnswer)
	v := w.view(t, 1)
	time.Sleep(30 * time.Second) // Ada thinks; every timeout passes
	p, err := w.fake.Submit(adaSlack, v, map[string]any{slack.BlockID(0, 0): "Ada", slack.BlockID(0, 1): "36"})
	if err != nil {
		t.Fatal(err)
	}
	if action, errs := w.send(t, b, p).ResponseAction(); action != "" || len(errs) > 0 {
		t.Fatalf("submission reply: %q %v", action, errs)
	}
	done := w.c.waitFor(b.URL, call.ID, 15*time.Second, isDone)
	if got := resultText(t, done.Result); got != "Hello, Ada! You are 36." {
		t.Fatalf("result = %q (%+v)", got, done)
	}
	up := w.updated(t, m)
	if !strings.Contains(up.Text, "Answered by ada") {
		t.Errorf("updated message = %q", up.Text)
	}
	if strings.Contains(fmt.Sprint(up.Blocks), "rounds_answer") {
		t.Errorf("the updated message still has its buttons: %v", up.Blocks)
	}
	if n := w.retries.count(); n != 1 {
		t.Errorf("the server got %d retries, want 1", n)
	}
	w.noViolations(t)
}

// TestSlackFieldErrorAndRetry: a submission Rounds' checks refuse comes
// back as Slack field errors, the modal kept open; the corrected one is
// taken, and Slack's resend of it (X-Slack-Retry-Num) answers nothing
// twice.
func TestSlackFieldErrorAndRetry(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	a, b := w.start(t), w.start(t)
	call := w.startFor(a.URL, "collect_user_info", "team:ops")
	m := w.message(t, opsRoom)
	w.press(t, a, adaSlack, m, slack.ActionAnswer)
	v := w.view(t, 1)
	p, err := w.fake.Submit(adaSlack, v, map[string]any{slack.BlockID(0, 0): "Ada", slack.BlockID(0, 1): "200"})
	if err != nil {
		t.Fatal(err)
	}
	action, errs := w.send(t, a, p).ResponseAction()
	if action != "errors" || errs[slack.BlockID(0, 1)] == "" {
		t.Fatalf("reply = %q %v, want an error on the age", action, errs)
	}
	if v := w.view(t, 1); v.Closed {
		t.Fatal("the modal closed on a field error")
	}
	p, err = w.fake.Submit(adaSlack, v, map[string]any{slack.BlockID(0, 0): "Ada", slack.BlockID(0, 1): "36"})
	if err != nil {
		t.Fatal(err)
	}
	sent := w.send(t, a, p)
	again, err := w.fake.Resend(context.Background(), sent, 1)
	if err != nil || again.Status != http.StatusOK {
		t.Fatalf("resend: %v %+v", err, again)
	}
	w.c.waitFor(b.URL, call.ID, 15*time.Second, isDone)
	w.updated(t, m)
	if n := w.retries.count(); n != 1 {
		t.Errorf("the server got %d retries, want 1", n)
	}
	for _, c := range w.fake.Calls("chat.postMessage") {
		if strings.Contains(c.Arg("text"), "already answered") || strings.Contains(c.Arg("text"), "Already answered") {
			t.Errorf("the resend was answered again: %q", c.Arg("text"))
		}
	}
	w.noViolations(t)
}

// buttonURL is the URL of the button actionID in blocks ("" when none).
func buttonURL(blocks []any, actionID string) string {
	for _, b := range blocks {
		bm, _ := b.(map[string]any)
		els, _ := bm["elements"].([]any)
		for _, e := range els {
			em, _ := e.(map[string]any)
			if em["action_id"] == actionID {
				u, _ := em["url"].(string)
				return u
			}
		}
	}
	return ""
}

// TestSlackStrangerLinksAndIsRefused: Bob, whom Rounds cannot match by a
// trusted address, presses Answer on the ops channel's round: he is asked
// to link his account, from a button to a Rounds page that asks him to
// sign in first and links only when he confirms, once. Linked, he is a
// stranger to the round: "This question is for the team ops."
func TestSlackStrangerLinksAndIsRefused(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	a := w.start(t)
	call := w.startFor(a.URL, "collect_user_info", "team:ops")
	m := w.message(t, opsRoom)
	w.press(t, a, bobSlack, m, slack.ActionAnswer)
	e := w.ephemeral(t, bobSlack, "Link your Rounds account")
	link := buttonURL(e.Blocks, "link")
	if !strings.HasPrefix(link, a.URL+"/slack/link?t=") {
		t.Fatalf("link button = %q", link)
	}
	if n := len(w.fake.Views()); n != 0 {
		t.Fatalf("%d modals opened for a person Rounds does not know", n)
	}

	// The link signs nobody in: it sends Bob to sign in, and back.
	bob := &client{t: t}
	bob.jar, _ = cookiejar.New(nil)
	status, _ := bob.do("GET", link, "", "")
	if status != http.StatusSeeOther {
		t.Fatalf("the link without a session: %d, want a redirect to sign in", status)
	}
	bob.login(a.URL, "bob", adminPassword)
	status, page := bob.do("GET", link, "", "")
	if status != http.StatusOK || !strings.Contains(string(page), "Link to bob") {
		t.Fatalf("link page: %d %s", status, page)
	}
	token := strings.TrimPrefix(link, a.URL+"/slack/link?t=")
	token, _ = url.QueryUnescape(token)
	status, page = bob.post(a.URL+"/slack/link", url.Values{"t": {token}})
	if status != http.StatusOK || !strings.Contains(string(page), `data-testid="slack-linked"`) {
		t.Fatalf("linking: %d %s", status, page)
	}
	if status, _ := bob.post(a.URL+"/slack/link", url.Values{"t": {token}}); status != http.StatusConflict {
		t.Errorf("the same link used again: %d, want 409", status)
	}

	w.press(t, a, bobSlack, m, slack.ActionAnswer)
	w.ephemeral(t, bobSlack, "This question is for the team ops.")
	if n := len(w.fake.Views()); n != 0 {
		t.Fatalf("a stranger got the modal")
	}
	if got := w.c.waitFor(a.URL, call.ID, 5*time.Second, roundIs(1)); got.Status != "input_required" {
		t.Fatalf("call = %+v", got)
	}
	w.noViolations(t)
}

// TestSlackDirectMessageAndOneTruth: a round for Ada goes to her by
// direct message, found by the address an admin set. Answered on the
// Rounds side (the API, as the page would), its message is updated
// (chat.update: who, buttons gone), and a press of its old button is told
// who answered when.
func TestSlackDirectMessageAndOneTruth(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	a, b := w.start(t), w.start(t)
	call := w.startFor(a.URL, "confirm_delete", "ada")
	if opened := w.fake.Calls("conversations.open"); len(opened) > 1 {
		t.Fatalf("conversations.open %d times", len(opened))
	}
	m := w.message(t, "D0ADA")
	if buttonURL(m.Blocks, slack.ActionOpen) == "" {
		t.Errorf("no Open in Rounds button: %v", m.Blocks)
	}
	w.c.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))
	if status, body := w.c.answer(b.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":false}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	up := w.updated(t, m)
	if !strings.Contains(up.Text, "Answered by admin") || strings.Contains(fmt.Sprint(up.Blocks), slack.ActionYes) {
		t.Errorf("updated message = %q %v", up.Text, up.Blocks)
	}
	w.press(t, a, adaSlack, m, slack.ActionYes)
	w.ephemeral(t, adaSlack, "Already answered by admin at")
	done := w.c.waitFor(a.URL, call.ID, 10*time.Second, isDone)
	if got := resultText(t, done.Result); !strings.HasPrefix(got, "Kept") {
		t.Errorf("result = %q: the late press answered", got)
	}
	w.noViolations(t)
}

// TestSlackButtonsAnswerInPlace: a yes/no round is answered from the
// message's Yes button, the same way as the page's.
func TestSlackButtonsAnswerInPlace(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	a := w.start(t)
	call := w.startFor(a.URL, "confirm_delete", "team:ops")
	m := w.message(t, opsRoom)
	w.press(t, a, adaSlack, m, slack.ActionYes)
	done := w.c.waitFor(a.URL, call.ID, 15*time.Second, isDone)
	if got := resultText(t, done.Result); !strings.HasPrefix(got, "Deleted") {
		t.Errorf("result = %q", got)
	}
	if up := w.updated(t, m); !strings.Contains(up.Text, "Answered by ada") {
		t.Errorf("updated message = %q", up.Text)
	}
	w.noViolations(t)
}

// TestSlackOpenInRounds: a question Slack cannot show faithfully (a URL
// to open) is posted with Open in Rounds and no Answer.
func TestSlackOpenInRounds(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	a := w.start(t)
	call := w.startFor(a.URL, "connect_account", "team:ops")
	m := w.message(t, opsRoom)
	if got := buttonURL(m.Blocks, slack.ActionOpen); got != a.URL+"/calls/"+call.ID {
		t.Errorf("Open in Rounds = %q", got)
	}
	if strings.Contains(fmt.Sprint(m.Blocks), slack.ActionAnswer) {
		t.Errorf("a URL question got an Answer button: %v", m.Blocks)
	}
	w.noViolations(t)
}

// TestSlackRefusesUnsigned: a request to /slack/interactions with a wrong
// signature, or signed more than 5 minutes ago, gets 401 and is counted.
func TestSlackRefusesUnsigned(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	a := w.start(t)
	call := w.startFor(a.URL, "confirm_delete", "team:ops")
	m := w.message(t, opsRoom)
	p, err := w.fake.Press(adaSlack, m, slack.ActionYes)
	if err != nil {
		t.Fatal(err)
	}
	w.fake.InteractionURL = a.URL + "/slack/interactions"
	ctx := context.Background()
	bad, err := w.fake.SendSigned(ctx, p.Encode(), "not-the-secret", time.Now(), nil)
	if err != nil || bad.Status != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %v %+v", err, bad)
	}
	old, err := w.fake.SendSigned(ctx, p.Encode(), slackfake.SigningSecret, time.Now().Add(-6*time.Minute), nil)
	if err != nil || old.Status != http.StatusUnauthorized {
		t.Fatalf("old timestamp: %v %+v", err, old)
	}
	_, metrics := w.c.do("GET", a.URL+"/metrics", "", "")
	for _, want := range []string{`rounds_slack_refused_total{reason="signature"} 1`, `rounds_slack_refused_total{reason="timestamp"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if got := w.c.waitFor(a.URL, call.ID, 5*time.Second, roundIs(1)); got.Status != "input_required" {
		t.Fatalf("a refused press answered: %+v", got)
	}
}

// TestSlackSocketMode: without a public address, interactions come over
// Socket Mode (apps.connections.open and its WebSocket): the modal opens,
// a field error rides back in the ack, and the corrected answer is taken.
func TestSlackSocketMode(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, true)
	a := w.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := w.fake.WaitSocket(ctx, 1); err != nil {
		t.Fatal(err)
	}
	call := w.startFor(a.URL, "collect_user_info", "team:ops")
	m := w.message(t, opsRoom)
	p, err := w.fake.Press(adaSlack, m, slack.ActionAnswer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.fake.SendSocket(ctx, p); err != nil {
		t.Fatal(err)
	}
	v := w.view(t, 1)
	p, err = w.fake.Submit(adaSlack, v, map[string]any{slack.BlockID(0, 1): "36"})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := w.fake.SendSocket(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	action, errs := (&slackfake.Sent{Body: ack}).ResponseAction()
	if action != "errors" || errs[slack.BlockID(0, 0)] == "" {
		t.Fatalf("ack = %s, want an error on the name", ack)
	}
	p, err = w.fake.Submit(adaSlack, v, map[string]any{slack.BlockID(0, 0): "Ada", slack.BlockID(0, 1): "36"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.fake.SendSocket(ctx, p); err != nil {
		t.Fatal(err)
	}
	done := w.c.waitFor(a.URL, call.ID, 15*time.Second, isDone)
	if got := resultText(t, done.Result); got != "Hello, Ada! You are 36." {
		t.Errorf("result = %q", got)
	}
	w.updated(t, m)
	w.noViolations(t)
}

// TestSlackOutage: Slack rate-limits the post and fails the update; the
// round is answered in Rounds all the same, and the jobs get through once
// Slack is back.
func TestSlackOutage(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	a := w.start(t)
	w.fake.Fail("chat.postMessage", slackfake.Failure{Error: "ratelimited", Status: http.StatusTooManyRequests, RetryAfter: time.Second, Times: 1})
	w.fake.Fail("chat.update", slackfake.Failure{Status: http.StatusInternalServerError, Times: 1})
	call := w.startFor(a.URL, "confirm_delete", "team:ops")
	m := w.message(t, opsRoom)
	if n := len(w.fake.Calls("chat.postMessage")); n < 2 {
		t.Errorf("chat.postMessage called %d times: the rate limit was not waited out", n)
	}
	if status, body := w.c.answer(a.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answer while Slack fails: %d %s", status, body)
	}
	w.c.waitFor(a.URL, call.ID, 10*time.Second, isDone)
	if up := w.updated(t, m); !strings.Contains(up.Text, "Answered by admin") {
		t.Errorf("updated message = %q", up.Text)
	}
}

// TestSlackDeclineInModal: Decline at the top of the modal declines the
// round, as the page's Decline does, and the modal says so.
func TestSlackDeclineInModal(t *testing.T) {
	t.Parallel()
	w := newSlackWorld(t, false)
	a := w.start(t)
	call := w.startFor(a.URL, "collect_user_info", "team:ops")
	m := w.message(t, opsRoom)
	w.press(t, a, adaSlack, m, slack.ActionAnswer)
	p, err := w.fake.PressInView(adaSlack, w.view(t, 1), slack.ActionDecline)
	if err != nil {
		t.Fatal(err)
	}
	w.send(t, a, p)
	done := w.c.waitFor(a.URL, call.ID, 15*time.Second, isDone)
	if got := resultText(t, done.Result); got != "No details shared." {
		t.Errorf("result = %q", got)
	}
	eventually(t, 10*time.Second, func() error {
		if v := w.view(t, 1); !strings.Contains(fmt.Sprint(v.View["blocks"]), "Declined.") {
			return fmt.Errorf("the modal says %v", v.View["blocks"])
		}
		return nil
	})
	if up := w.updated(t, m); !strings.Contains(up.Text, "Declined by ada") {
		t.Errorf("updated message = %q", up.Text)
	}
	w.noViolations(t)
}
