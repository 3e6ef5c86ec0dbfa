package slack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	slackapi "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// AddWorkers adds the jobs that post rounds to Slack and update their
// messages to River's workers.
func (s *Service) AddWorkers(w *river.Workers) error {
	if err := river.AddWorkerSafely(w, &postWorker{s: s}); err != nil {
		return err
	}
	return river.AddWorkerSafely(w, &updateWorker{s: s})
}

type postWorker struct {
	river.WorkerDefaults[queue.SlackPostArgs]
	s *Service
}

// Timeout bounds a post: a lookup, a conversation opened and a message.
func (w *postWorker) Timeout(*river.Job[queue.SlackPostArgs]) time.Duration { return 3 * w.s.o.Timeout }

// Work posts the round where it goes; a round that no longer waits, or
// that goes to nobody Slack knows, is posted nowhere.
func (w *postWorker) Work(ctx context.Context, job *river.Job[queue.SlackPostArgs]) error {
	return waitIfLimited(w.s.post(ctx, job.Args.CallID, job.Args.Seq))
}

type updateWorker struct {
	river.WorkerDefaults[queue.SlackUpdateArgs]
	s *Service
}

// Timeout bounds the updates of one round's messages.
func (w *updateWorker) Timeout(*river.Job[queue.SlackUpdateArgs]) time.Duration {
	return 3 * w.s.o.Timeout
}

// Work updates the round's messages to what the round is now.
func (w *updateWorker) Work(ctx context.Context, job *river.Job[queue.SlackUpdateArgs]) error {
	return waitIfLimited(w.s.update(ctx, job.Args.CallID, job.Args.Seq))
}

// waitIfLimited has a job Slack rate-limited wait as long as Slack's
// Retry-After asks, without spending an attempt.
func waitIfLimited(err error) error {
	var rl *slackapi.RateLimitedError
	if errors.As(err, &rl) {
		return river.JobSnooze(max(rl.RetryAfter, time.Second))
	}
	return err
}

// post posts round seq of a call: by direct message to the person it is
// for, found by their linked Slack user or their trusted address, or to
// their team's channel.
func (s *Service) post(ctx context.Context, callID string, seq int) error {
	call, r, err := s.read(ctx, callID, seq)
	if err != nil || r == nil || r.Status != store.RoundPending {
		return err
	}
	channel, err := s.channel(ctx, callID, seq)
	if gone := permanent(err); gone != "" {
		s.o.Log.WarnContext(ctx, "slack: a round's person could not be reached", "call_id", callID, "seq", seq, "error", gone)
		return nil
	}
	if err != nil || channel == "" {
		return err
	}
	if posted, err := s.o.Store.SlackRoundPosted(ctx, callID, seq, channel); err != nil || posted {
		return err
	}
	blocks, text, err := roundMessage(call, r, s.o.PublicURL)
	if err != nil {
		return err
	}
	ch, ts, err := s.api.PostMessageContext(ctx, channel, slackapi.MsgOptionBlocks(blocks...), slackapi.MsgOptionText(text, false))
	if gone := permanent(err); gone != "" {
		// Trying again would not help: the admin must invite the app or
		// fix the team's channel.
		s.o.Log.WarnContext(ctx, "slack: a round could not be posted", "call_id", callID, "seq", seq, "channel", channel, "error", gone)
		return nil
	}
	if err != nil {
		return fmt.Errorf("chat.postMessage: %w", err)
	}
	if err := s.o.Store.SaveSlackMessage(ctx, callID, seq, store.SlackMessage{Channel: ch, TS: ts}); err != nil {
		return err
	}
	// A round that ended while it was posted had its update enqueued
	// before the message was known: it is updated now.
	if _, r, err := s.read(ctx, callID, seq); err != nil || r == nil || r.Status == store.RoundPending {
		return err
	}
	return s.update(ctx, callID, seq)
}

// channel is where round seq goes: the team's channel, or a direct
// message with the person (matched by their trusted address the first
// time). "" for nowhere.
func (s *Service) channel(ctx context.Context, callID string, seq int) (string, error) {
	t, err := s.o.Store.SlackTarget(ctx, callID, seq)
	if err != nil || t.Channel != "" || t.Person == nil {
		return t.Channel, err
	}
	user := ""
	if t.Person.SlackUser != nil {
		user = *t.Person.SlackUser
	} else if t.Person.TrustedEmail != "" {
		u, err := s.api.GetUserByEmailContext(ctx, t.Person.TrustedEmail)
		if isSlackError(err, "users_not_found") {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("users.lookupByEmail: %w", err)
		}
		if err := s.o.Store.SetSlackUser(ctx, t.Person.Name, u.ID); err != nil {
			return "", err
		}
		user = u.ID
	}
	if user == "" {
		return "", nil
	}
	ch, _, _, err := s.api.OpenConversationContext(ctx, &slackapi.OpenConversationParameters{Users: []string{user}})
	if err != nil {
		return "", fmt.Errorf("conversations.open: %w", err)
	}
	return ch.ID, nil
}

// update updates the messages of round seq that no longer ask for
// answers: who answered and when, or how it ended, its buttons gone.
func (s *Service) update(ctx context.Context, callID string, seq int) error {
	call, r, err := s.read(ctx, callID, seq)
	if err != nil || r == nil {
		return err
	}
	msgs, err := s.o.Store.SlackMessages(ctx, callID, seq)
	if err != nil || len(msgs) == 0 {
		return err
	}
	blocks, text, err := endedMessage(call, r, s.o.PublicURL)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		_, _, _, err := s.api.UpdateMessageContext(ctx, m.Channel, m.TS, slackapi.MsgOptionBlocks(blocks...), slackapi.MsgOptionText(text, false))
		if err != nil && !isSlackError(err, "message_not_found") && !isSlackError(err, "channel_not_found") {
			return fmt.Errorf("chat.update: %w", err)
		}
	}
	return nil
}

// read reads a call and its round; nil (no error) when they are gone.
func (s *Service) read(ctx context.Context, callID string, seq int) (*store.Call, *store.Round, error) {
	call, err := s.o.Store.Call(ctx, callID)
	if err == nil {
		var r *store.Round
		r, err = s.o.Store.Round(ctx, callID, seq)
		if err == nil {
			return call, r, nil
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	return nil, nil, err
}

// permanent is the Web API's error code when posting to a channel can
// never work as things are ("" for any other error, or none).
func permanent(err error) string {
	for _, code := range []string{"channel_not_found", "not_in_channel", "is_archived", "user_not_found"} {
		if isSlackError(err, code) {
			return code
		}
	}
	return ""
}
