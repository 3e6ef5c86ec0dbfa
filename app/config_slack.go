package app

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// SlackConfig is Rounds in Slack (SLACK_*): on when BotToken is set, with
// interactions either posted to PUBLIC_URL/slack/interactions and signed
// with SigningSecret, or taken over Socket Mode with AppToken.
type SlackConfig struct {
	BotToken      string
	SigningSecret string
	AppToken      string
	// APIURL is the Web API base, with its trailing slash.
	APIURL string
}

// DefaultSlackAPIURL is Slack's own Web API.
const DefaultSlackAPIURL = "https://slack.com/api/"

// On says whether Slack is configured.
func (s SlackConfig) On() bool { return s.BotToken != "" }

// readSlack reads SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_APP_TOKEN
// and SLACK_API_URL. The tokens stay in memory: nothing stores them.
func (c *Config) readSlack(getenv func(string) string) error {
	s := SlackConfig{BotToken: strings.TrimSpace(getenv("SLACK_BOT_TOKEN")),
		SigningSecret: strings.TrimSpace(getenv("SLACK_SIGNING_SECRET")),
		AppToken:      strings.TrimSpace(getenv("SLACK_APP_TOKEN")),
		APIURL:        or(getenv("SLACK_API_URL"), DefaultSlackAPIURL)}
	u, err := url.Parse(s.APIURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("SLACK_API_URL: want an http or https URL, got %q", s.APIURL)
	}
	if !strings.HasSuffix(s.APIURL, "/") {
		s.APIURL += "/"
	}
	switch {
	case s.BotToken == "" && (s.SigningSecret != "" || s.AppToken != ""):
		return errors.New("SLACK_SIGNING_SECRET and SLACK_APP_TOKEN need SLACK_BOT_TOKEN (xoxb-…)")
	case s.BotToken == "":
	case !strings.HasPrefix(s.BotToken, "xoxb-"):
		return errors.New("SLACK_BOT_TOKEN: want the bot token, which starts with xoxb-")
	case s.AppToken != "" && !strings.HasPrefix(s.AppToken, "xapp-"):
		return errors.New("SLACK_APP_TOKEN: want an app-level token, which starts with xapp-")
	case s.SigningSecret == "" && s.AppToken == "":
		return errors.New("SLACK_BOT_TOKEN needs SLACK_SIGNING_SECRET (interactions at PUBLIC_URL/slack/interactions) or SLACK_APP_TOKEN (Socket Mode)")
	}
	c.Slack = s
	return nil
}
