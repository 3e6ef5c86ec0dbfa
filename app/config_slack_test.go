package app

import (
	"testing"
)

func TestReadSlack(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want SlackConfig
		err  bool
	}{
		{"OKOff", map[string]string{}, SlackConfig{APIURL: DefaultSlackAPIURL}, false},
		{"OKInteractions", map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"},
			SlackConfig{BotToken: "xoxb-1", SigningSecret: "s", APIURL: DefaultSlackAPIURL}, false},
		{"OKSocketMode", map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "SLACK_API_URL": "http://127.0.0.1:9/api"},
			SlackConfig{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://127.0.0.1:9/api/"}, false},
		{"ErrNoWayIn", map[string]string{"SLACK_BOT_TOKEN": "xoxb-1"}, SlackConfig{}, true},
		{"ErrSecretAlone", map[string]string{"SLACK_SIGNING_SECRET": "s"}, SlackConfig{}, true},
		{"ErrUserToken", map[string]string{"SLACK_BOT_TOKEN": "xoxp-1", "SLACK_SIGNING_SECRET": "s"}, SlackConfig{}, true},
		{"ErrAppToken", map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"}, SlackConfig{}, true},
		{"ErrAPIURL", map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "SLACK_API_URL": "slack.com"}, SlackConfig{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			err := c.readSlack(func(k string) string { return tc.env[k] })
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error: %t", err, tc.err)
			}
			if !tc.err && c.Slack != tc.want {
				t.Errorf("got %+v, want %+v", c.Slack, tc.want)
			}
		})
	}
}
