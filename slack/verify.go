package slack

import (
	"errors"
	"io"
	"net/http"
	"time"

	slackapi "github.com/slack-go/slack"
)

// MaxBody bounds a request to /slack/interactions. Slack's largest
// payload, a modal's submission of 100 blocks, is far smaller.
const MaxBody = 1 << 20

// errRefused is a request that is not Slack's: a 401.
var errRefused = errors.New("not a request from Slack")

// verified reads the body of a request to /slack/interactions and checks
// it came from Slack: the X-Slack-Signature HMAC (v0) of the body under the
// signing secret, and an X-Slack-Request-Timestamp within 5 minutes. Any
// other request is counted and refused.
func (s *Service) verified(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
	if err != nil {
		return nil, s.refused(r, "size", err)
	}
	sv, err := slackapi.NewSecretsVerifier(r.Header, s.o.SigningSecret)
	if errors.Is(err, slackapi.ErrExpiredTimestamp) {
		return nil, s.refused(r, "timestamp", err)
	}
	if err != nil {
		return nil, s.refused(r, "signature", err)
	}
	if _, err := sv.Write(body); err != nil {
		return nil, s.refused(r, "signature", err)
	}
	if err := sv.Ensure(); err != nil {
		return nil, s.refused(r, "signature", err)
	}
	return body, nil
}

// refused counts a refused request, and logs it unless one was logged in
// the last minute (saying how many were refused since).
func (s *Service) refused(r *http.Request, reason string, err error) error {
	s.o.Metrics.SlackRefused(reason)
	s.mu.Lock()
	now := s.o.Now()
	s.refusedN++
	n, log := s.refusedN, now.Sub(s.refusedAt) >= time.Minute
	if log {
		s.refusedAt, s.refusedN = now, 0
	}
	s.mu.Unlock()
	if log {
		s.o.Log.Warn("slack: refused a request to /slack/interactions", "reason", reason, "err", err,
			"addr", r.RemoteAddr, "refused_since_last_logged", n)
	}
	return errRefused
}
