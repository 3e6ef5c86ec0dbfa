package slackfake_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/slack/slackfake"
)

func client(f *slackfake.Fake, token string) *slack.Client {
	return slack.New(token, slack.OptionAPIURL(f.APIURL()))
}

var approveBlocks = []slack.Block{
	slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "*Deploy?*", false, false), nil, nil),
	slack.NewActionBlock("round-1",
		slack.NewButtonBlockElement("approve", "r1", slack.NewTextBlockObject("plain_text", "Approve", false, false)),
		slack.NewButtonBlockElement("decline", "r1", slack.NewTextBlockObject("plain_text", "Decline", false, false))),
}

// TestWebAPI: slack-go's own client posts, updates, looks up and opens
// conversations against the fake, and every call is recorded with its token.
func TestWebAPI(t *testing.T) {
	f := slackfake.New(t)
	f.AddChannel("C1")
	f.AddUser(slackfake.User{ID: "U1", Name: "ada", Email: "Ada@example.com"})
	api := client(f, slackfake.BotToken)
	ctx := context.Background()

	ch, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("Deploy?", false), slack.MsgOptionBlocks(approveBlocks...))
	if err != nil || ch != "C1" || ts == "" {
		t.Fatalf("postMessage = %q %q %v", ch, ts, err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("Approved by ada", false), slack.MsgOptionBlocks()); err != nil {
		t.Fatal(err)
	}
	msgs := f.Messages()
	if len(msgs) != 1 || msgs[0].Text != "Approved by ada" || len(msgs[0].Blocks) != 0 || msgs[0].Updated != 1 {
		t.Errorf("messages after update = %+v", msgs)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", "1.2", slack.MsgOptionText("x", false)); err == nil || err.Error() != "message_not_found" {
		t.Errorf("update of an unknown ts: %v, want message_not_found", err)
	}
	u, err := api.GetUserByEmailContext(ctx, "ada@example.com")
	if err != nil || u.ID != "U1" || u.Profile.Email != "Ada@example.com" {
		t.Errorf("lookupByEmail = %+v, %v", u, err)
	}
	if _, err := api.GetUserByEmailContext(ctx, "bob@example.com"); err == nil || err.Error() != "users_not_found" {
		t.Errorf("lookup of a stranger: %v, want users_not_found", err)
	}
	dm, _, _, err := api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{"U1"}})
	if err != nil || dm.ID != "D1" {
		t.Errorf("conversations.open = %+v, %v", dm, err)
	}
	if _, err := api.PostEphemeralContext(ctx, "C1", "U1", slack.MsgOptionText("This question is for bob", false)); err != nil {
		t.Fatal(err)
	}
	if e := f.Ephemerals(); len(e) != 1 || e[0].User != "U1" {
		t.Errorf("ephemerals = %+v", e)
	}
	calls := f.Calls("chat.postMessage")
	if len(calls) != 1 || calls[0].Token != slackfake.BotToken || calls[0].Arg("channel") != "C1" || calls[0].At.IsZero() {
		t.Errorf("recorded postMessage = %+v", calls)
	}
	if blocks, _ := calls[0].Args["blocks"].([]any); len(blocks) != 2 {
		t.Errorf("recorded blocks = %v, want the two blocks decoded", calls[0].Args["blocks"])
	}
	if v := f.Violations(); len(v) != 0 {
		t.Errorf("violations = %v", v)
	}
}

// TestAuth: tokens are checked as Slack checks them.
func TestAuth(t *testing.T) {
	f := slackfake.New(t)
	f.AddChannel("C1")
	for _, tc := range []struct{ name, token, want string }{
		{"NoToken", "", "not_authed"},
		{"WrongToken", "xoxb-nope", "invalid_auth"},
		{"AppToken", slackfake.AppToken, "not_allowed_token_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := client(f, tc.token).PostMessage("C1", slack.MsgOptionText("hi", false))
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %s", err, tc.want)
			}
		})
	}
	if _, _, err := client(f, slackfake.BotToken).PostMessage("C404", slack.MsgOptionText("hi", false)); err == nil || err.Error() != "channel_not_found" {
		t.Errorf("unknown channel: %v", err)
	}
}

// TestFailures: a method told to fail answers 429 with Retry-After, or 500,
// and works again after Times calls or Heal.
func TestFailures(t *testing.T) {
	f := slackfake.New(t)
	f.AddChannel("C1")
	api := client(f, slackfake.BotToken)
	f.Fail("chat.postMessage", slackfake.Failure{Status: http.StatusTooManyRequests, Error: "ratelimited", RetryAfter: 30 * time.Second, Times: 1})
	_, _, err := api.PostMessage("C1", slack.MsgOptionText("hi", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 30*time.Second {
		t.Fatalf("err = %v, want rate limited for 30s", err)
	}
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("hi", false)); err != nil {
		t.Errorf("after one failure: %v", err)
	}
	f.Fail("chat.update", slackfake.Failure{Status: http.StatusInternalServerError})
	if _, _, _, err := api.UpdateMessage("C1", f.Messages()[0].TS, slack.MsgOptionText("x", false)); err == nil {
		t.Error("update during an outage succeeded")
	}
	f.Heal()
	if _, _, _, err := api.UpdateMessage("C1", f.Messages()[0].TS, slack.MsgOptionText("x", false)); err != nil {
		t.Errorf("after Heal: %v", err)
	}
}

// TestBreachRefused: a message over Block Kit's limits is refused with
// invalid_blocks and listed in Violations.
func TestBreachRefused(t *testing.T) {
	f := slackfake.New(t)
	f.AddChannel("C1")
	var blocks []slack.Block
	for range 51 {
		blocks = append(blocks, slack.NewDividerBlock())
	}
	_, _, err := client(f, slackfake.BotToken).PostMessage("C1", slack.MsgOptionBlocks(blocks...))
	if err == nil || err.Error() != "invalid_blocks" {
		t.Errorf("err = %v, want invalid_blocks", err)
	}
	v := f.Violations()
	if len(v) != 1 || !strings.Contains(v[0].Problem, "51 blocks") {
		t.Errorf("violations = %v", v)
	}
	if len(f.Messages()) != 0 {
		t.Error("a refused message was kept")
	}
}

func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// TestFormBody: a form-encoded call with blocks as JSON text is read like a JSON one.
func TestFormBody(t *testing.T) {
	f := slackfake.New(t)
	f.AddChannel("C1")
	resp, err := http.PostForm(f.APIURL()+"chat.postMessage", form("token", slackfake.BotToken, "channel", "C1",
		"blocks", `[{"type":"section","text":{"type":"plain_text","text":"hi"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out["ok"] != true {
		t.Fatalf("answer = %v, %v", out, err)
	}
	if m := f.Messages(); len(m) != 1 || len(m[0].Blocks) != 1 {
		t.Errorf("messages = %+v", m)
	}
}
