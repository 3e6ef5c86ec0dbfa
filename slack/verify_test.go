package slack_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/slack"
	"github.com/mcp-rounds/rounds/slack/slackfake"
)

// TestInteractionsRefused: /slack/interactions answers 401 to anything but
// Slack's signed request of the last 5 minutes, and bounds the body; a
// signed request that is no interaction is a 400, not a 401.
func TestInteractionsRefused(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := slack.New(slack.Options{SigningSecret: slackfake.SigningSecret, BotToken: slackfake.BotToken,
		APIURL: "http://127.0.0.1:1/api/", Log: slog.New(slog.NewTextHandler(&logs, nil))})
	body := []byte("payload=%7B%7D")
	now := time.Now()
	for _, tc := range []struct {
		name   string
		body   []byte
		secret string
		at     time.Time
		want   int
	}{
		{"OK", body, slackfake.SigningSecret, now, http.StatusOK},
		{"ErrSignature", body, "another secret", now, http.StatusUnauthorized},
		{"ErrOld", body, slackfake.SigningSecret, now.Add(-5*time.Minute - time.Second), http.StatusUnauthorized},
		{"ErrFuture", body, slackfake.SigningSecret, now.Add(6 * time.Minute), http.StatusUnauthorized},
		{"ErrTooBig", append([]byte("payload="), bytes.Repeat([]byte("a"), slack.MaxBody)...), slackfake.SigningSecret, now, http.StatusUnauthorized},
		{"ErrNotInteraction", []byte("payload=not+json"), slackfake.SigningSecret, now, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/slack/interactions", bytes.NewReader(tc.body))
			req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(tc.at.Unix(), 10))
			req.Header.Set("X-Slack-Signature", slackfake.Sign(tc.secret, tc.at.Unix(), tc.body))
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("status = %d, want %d", rec.Code, tc.want)
			}
		})
	}
	unsigned := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader("payload=%7B%7D"))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, unsigned)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("unsigned: %d", rec.Code)
	}
	// Five refusals, one line: at most one a minute.
	if n := strings.Count(logs.String(), "refused a request"); n != 1 {
		t.Errorf("%d log lines for 5 refusals, want 1:\n%s", n, logs.String())
	}
}

// TestLinkTokens: a link token is read back until it expires, and a
// changed one is refused.
func TestLinkTokens(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	l := slack.Link{SlackUser: "U0ADA", Expires: now.Add(slack.LinkTTL), Nonce: "n1"}
	token := slack.SignLink(key, l)
	got, err := slack.ReadLink(key, token, now)
	if err != nil || got.SlackUser != "U0ADA" || got.Nonce != "n1" {
		t.Fatalf("ReadLink = %+v, %v", got, err)
	}
	if _, err := slack.ReadLink(key, token, now.Add(slack.LinkTTL)); err != slack.ErrLinkInvalid {
		t.Errorf("an expired link: %v", err)
	}
	if _, err := slack.ReadLink([]byte("another key, just as long as that"), token, now); err != slack.ErrLinkInvalid {
		t.Errorf("another key's link: %v", err)
	}
	other := slack.SignLink(key, slack.Link{SlackUser: "U0BOB", Expires: l.Expires, Nonce: "n1"})
	forged := strings.SplitN(other, ".", 2)[0] + "." + strings.SplitN(token, ".", 2)[1]
	if _, err := slack.ReadLink(key, forged, now); err != slack.ErrLinkInvalid {
		t.Errorf("a forged link: %v", err)
	}
}
