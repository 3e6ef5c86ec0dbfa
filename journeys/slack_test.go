package journeys

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	w.c.t.Helper()
	status, b := w.c.do("POST", base+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"`+tool+`","arguments":{},"assignee":"`+assignee+`"}`)
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
