package slackfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/mcp-rounds/rounds/slack/slackfake"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// TestSocketMode: slack-go's socketmode client opens a connection with the
// app token, receives an interactive envelope, and its ack (with a
// response_action payload) comes back to the sender.
func TestSocketMode(t *testing.T) {
	f := slackfake.New(t)
	f.AddChannel("C1")
	f.AddUser(slackfake.User{ID: "U1", Name: "ada"})
	api := slack.New(slackfake.BotToken, slack.OptionAPIURL(f.APIURL()), slack.OptionAppLevelToken(slackfake.AppToken))
	sm := socketmode.New(api)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { _ = sm.RunContext(ctx) }()
	go func() {
		for ev := range sm.Events {
			if ev.Type != socketmode.EventTypeInteractive {
				continue
			}
			cb := ev.Data.(slack.InteractionCallback)
			if cb.Type == slack.InteractionTypeViewSubmission {
				_ = sm.Ack(*ev.Request, map[string]any{"response_action": "errors", "errors": map[string]string{"name": "Say a name"}})
				continue
			}
			_ = sm.Ack(*ev.Request)
		}
	}()
	if err := f.WaitSocket(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if c := f.Calls("apps.connections.open"); len(c) != 1 || c[0].Token != slackfake.AppToken {
		t.Errorf("apps.connections.open calls = %+v", c)
	}
	if _, _, err := api.PostMessage("C1", slack.MsgOptionBlocks(approveBlocks...)); err != nil {
		t.Fatal(err)
	}
	press, _ := f.Press("U1", f.Messages()[0], "approve")
	if _, err := f.SendSocket(ctx, press); err != nil {
		t.Fatalf("block_actions not acked: %v", err)
	}
	if _, err := api.OpenView(press.TriggerID(), testView()); err != nil {
		t.Fatal(err)
	}
	sub, _ := f.Submit("U1", f.Views()[0], nil)
	ack, err := f.SendSocket(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(ack, &reply); err != nil || reply.ResponseAction != "errors" || reply.Errors["name"] != "Say a name" {
		t.Errorf("ack payload = %s", ack)
	}
}

// TestSocketRefusesBotToken: apps.connections.open takes only an app-level token.
func TestSocketRefusesBotToken(t *testing.T) {
	f := slackfake.New(t)
	api := slack.New(slackfake.BotToken, slack.OptionAPIURL(f.APIURL()), slack.OptionAppLevelToken(slackfake.BotToken))
	if _, _, err := api.StartSocketModeContext(context.Background()); err == nil || err.Error() != "not_allowed_token_type" {
		t.Errorf("err = %v, want not_allowed_token_type", err)
	}
}
