package slack

// The Slack app itself: rounds posted to the people and teams they wait
// for, answered from the message or the modal, and the messages kept in
// step with the round wherever it is answered (docs/slack.md).
// Interactions come signed over HTTP (/slack/interactions) or over Socket
// Mode; posting and updating are River jobs, so a Slack outage never
// holds up an answer in Rounds.

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/metrics"
	"github.com/mcp-rounds/rounds/store"
)

// Options configure the Slack side of an instance.
type Options struct {
	Store *store.Store
	// BotToken calls the Web API; it is never stored. SigningSecret
	// checks interactions posted over HTTP; AppToken opens Socket Mode.
	BotToken, SigningSecret, AppToken string
	// APIURL is the Web API base, with its trailing slash.
	APIURL string
	// PublicURL is where people reach Rounds: links in messages.
	PublicURL string
	// LinkKey signs the links that tie a Slack user to an account.
	LinkKey []byte
	// Answer stores an answer and sends it on (engine.Answer).
	Answer  func(context.Context, store.Answer) (*store.Call, error)
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// InstanceID names this instance in the audit log.
	InstanceID string
	// Timeout bounds one Web API call.
	Timeout time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Service is Rounds' Slack app on one instance.
type Service struct {
	o   Options
	api *slackapi.Client
	// refusedAt is when a refused request was last logged: at most once a
	// minute, so that a flood of them cannot flood the log.
	mu        sync.Mutex
	refusedAt time.Time
	refusedN  int
	// background are answers stored after the reply to their interaction.
	background sync.WaitGroup
}

// New builds the service; it calls Slack only when asked to.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	opts := []slackapi.Option{slackapi.OptionAPIURL(o.APIURL), slackapi.OptionHTTPClient(&http.Client{Timeout: o.Timeout})}
	if o.AppToken != "" {
		opts = append(opts, slackapi.OptionAppLevelToken(o.AppToken))
	}
	return &Service{o: o, api: slackapi.New(o.BotToken, opts...)}
}

// Wait waits for the answers stored after their interactions' replies.
func (s *Service) Wait() { s.background.Wait() }

// TakesHTTP says whether interactions come to /slack/interactions (a
// signing secret is set) rather than only over Socket Mode.
func (s *Service) TakesHTTP() bool { return s.o.SigningSecret != "" }
