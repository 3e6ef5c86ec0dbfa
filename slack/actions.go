package slack

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	slackapi "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// action handles one button pressed in a round's message: Answer opens
// the modal (within the 3 seconds its trigger lasts); a yes, a no or a
// choice answers at once, after the reply; a link button needs nothing.
func (s *Service) action(ctx context.Context, cb *slackapi.InteractionCallback, a *slackapi.BlockAction) error {
	b, ok := ParseButton(a.ActionID)
	ref, refOK := parseRef(a.Value)
	if !ok || !refOK || b.Action == ActionOpen {
		return nil // a link (Open in Rounds, Link my account), or not Rounds'
	}
	call, r, err := s.read(ctx, ref.CallID, ref.Seq)
	if err != nil || r == nil {
		return err
	}
	if msg, err := s.stale(ctx, cb, call, r, ref); err != nil || msg != "" {
		if err != nil {
			return err
		}
		return s.ephemeral(ctx, cb, msg)
	}
	person, err := s.person(ctx, cb.User.ID, assignee(call, r))
	if err != nil {
		return err
	}
	if person == nil {
		return s.askToLink(ctx, cb)
	}
	if _, _, may, err := s.roundFor(ctx, person, ref.CallID, ref.Seq); err != nil || !may {
		if err != nil {
			return err
		}
		return s.ephemeral(ctx, cb, forWhom(call, r))
	}
	qs, err := questions(call, r)
	if err != nil {
		return err
	}
	if b.Action == ActionAnswer {
		return s.openModal(ctx, cb, call, r)
	}
	values, ok := QuickValues(qs, b)
	if !ok {
		return s.ephemeral(ctx, cb, "This button no longer fits the round: open it in Rounds.")
	}
	// Slack resends a press it got no reply to; the resend is taken once.
	first, err := s.o.Store.TakeSlackInteraction(ctx, "action:"+cb.User.ID+":"+a.ActionTs)
	if err != nil || !first {
		return err
	}
	s.later(ctx, func(ctx context.Context) {
		msg := s.store(ctx, person, ref.CallID, ref.Seq, values)
		if msg == "" && cb.View.ID != "" { // the modal's Decline or Cancel
			msg = map[string]string{ActionDecline: "Declined.", ActionCancel: "Cancelled."}[b.Action]
		}
		if msg != "" {
			if err := s.ephemeral(ctx, cb, msg); err != nil {
				s.o.Log.WarnContext(ctx, "slack: could not tell a person what became of their answer", "err", err)
			}
		}
	})
	return nil
}

// stale is what anyone who presses a message that no longer asks for
// answers is told, before Rounds asks who they are: who answered when or
// how the round ended, or, for a message posted before the round
// escalated, whom it is for now. The message says as much to the channel
// once updated. "" for a message that still asks.
func (s *Service) stale(ctx context.Context, cb *slackapi.InteractionCallback, call *store.Call, r *store.Round, ref roundRef) (string, error) {
	if msg := notWaiting(r); msg != "" {
		return msg, nil
	}
	if cb.Container.MessageTs == "" {
		return "", nil // a press inside a modal
	}
	msgs, err := s.o.Store.SlackMessages(ctx, ref.CallID, ref.Seq)
	if err != nil {
		return "", err
	}
	for _, m := range msgs {
		if m.Channel == cb.Container.ChannelID && m.TS == cb.Container.MessageTs {
			return forWhom(call, r), nil
		}
	}
	return "", nil
}

// openModal opens the round's modal on the trigger of the press: Slack
// gives 3 seconds. A press from inside the modal (Decline, Cancel) has
// answered above; a round that cannot be shown faithfully is sent to
// Rounds.
func (s *Service) openModal(ctx context.Context, cb *slackapi.InteractionCallback, call *store.Call, r *store.Round) error {
	a, err := ask(call, r, s.o.PublicURL)
	if err != nil {
		return err
	}
	view, err := Modal(a)
	var nf *NotFit
	if errors.As(err, &nf) {
		return s.ephemeral(ctx, cb, "Answer this in Rounds: "+nf.Reason+" "+a.URL)
	}
	if err != nil {
		return err
	}
	if _, err := s.api.OpenViewContext(ctx, cb.TriggerID, view); err != nil {
		return fmt.Errorf("views.open: %w", err)
	}
	return nil
}

// later runs fn after the reply to the interaction, bounded by the
// service's timeout and not by the request's.
func (s *Service) later(ctx context.Context, fn func(context.Context)) {
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*s.o.Timeout)
		defer cancel()
		fn(ctx)
	}()
}

// store stores the person's answer to round seq from Slack by the same
// road as the page's (engine.Answer: read, check, store, send, once), and
// says what went wrong in words for the person ("" when nothing did).
func (s *Service) store(ctx context.Context, person *store.SlackPerson, callID string, seq int, values url.Values) string {
	_, err := s.o.Answer(ctx, store.Answer{CallID: callID, Seq: seq, Person: person.Name,
		Decide: func(at store.Answering) (store.Decision, error) {
			if !person.IsAdmin && !at.Assigned && !(at.Call.Assignee == nil && at.Call.Owner == person.Name) {
				return store.Decision{}, errNotYours
			}
			a, err := round.FormAnswer(at.Call, at.Round, values)
			if err != nil {
				return store.Decision{}, err
			}
			if !a.Fits() {
				return store.Decision{}, errUnfit
			}
			outcome, n := round.Outcome(a.Responses)
			detail := map[string]any{"seq": seq, "server": at.Call.ServerName, "via": "slack",
				"accept": n.Accept, "decline": n.Decline, "cancel": n.Cancel}
			if at.Call.Assignee != nil {
				detail["assignee"] = *at.Call.Assignee
			}
			return store.Decision{Responses: a.Responses, By: person.Name, Refusal: a.Refusal,
				Audit: []store.AuditEntry{{Instance: s.o.InstanceID, Actor: person.Name, Action: "round." + outcome,
					Target: callID, Detail: detail}}}, nil
		}})
	var se *store.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, round.ErrNotWaiting), errors.Is(err, store.ErrConflict):
		if _, r, rerr := s.read(ctx, callID, seq); rerr == nil && r != nil && notWaiting(r) != "" {
			return notWaiting(r)
		}
		if errors.As(err, &se) {
			return se.Message
		}
		return store.NotWaitingMessage
	case errors.Is(err, errNotYours):
		return "This question is not yours to answer."
	case errors.Is(err, errUnfit):
		return "Some answers need another look: open the round in Rounds."
	}
	s.o.Log.ErrorContext(ctx, "slack: storing an answer failed", "call_id", callID, "seq", seq, "err", err)
	return "Rounds could not store your answer just now. Try again, or answer in Rounds."
}

var (
	errNotYours = errors.New("the round is not the person's to answer")
	errUnfit    = errors.New("the answer does not fit")
)
