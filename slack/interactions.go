package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/store"
)

// ServeHTTP takes an interaction Slack posts to /slack/interactions: a
// request that is not Slack's (signature, timestamp, size) gets 401; any
// other gets 200 within Slack's 3 seconds, with the reply a modal's
// submission may need (its field errors).
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := s.verified(r)
	if err != nil {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	form, err := url.ParseQuery(string(body))
	var cb slackapi.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &cb)
	}
	if err != nil {
		http.Error(w, "The payload is not an interaction.", http.StatusBadRequest)
		return
	}
	reply, err := s.Interact(r.Context(), &cb)
	if err != nil {
		s.o.Log.ErrorContext(r.Context(), "slack: interaction failed", "type", cb.Type, "err", err)
	}
	if reply == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

// Interact handles one interaction, over HTTP or Socket Mode alike, and
// returns the reply it needs (nil for none).
func (s *Service) Interact(ctx context.Context, cb *slackapi.InteractionCallback) (any, error) {
	switch cb.Type {
	case slackapi.InteractionTypeBlockActions:
		for _, a := range cb.ActionCallback.BlockActions {
			if err := s.action(ctx, cb, a); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case slackapi.InteractionTypeViewSubmission:
		return s.submit(ctx, cb)
	}
	return nil, nil
}

// person is the Rounds account of a Slack user: linked before, or matched
// now by e-mail among those who may answer rounds assigned to who: an
// account whose address Rounds trusts, that Slack finds as this user
// (users.lookupByEmail). nil when neither.
func (s *Service) person(ctx context.Context, slackUser, who string) (*store.SlackPerson, error) {
	p, err := s.o.Store.UserBySlack(ctx, slackUser)
	if !errors.Is(err, store.ErrNotFound) {
		return p, err
	}
	unmatched, err := s.o.Store.SlackUnmatched(ctx, who)
	if err != nil {
		return nil, err
	}
	for _, email := range unmatched {
		u, err := s.api.GetUserByEmailContext(ctx, email)
		if err != nil {
			if isSlackError(err, "users_not_found") {
				continue
			}
			return nil, fmt.Errorf("users.lookupByEmail: %w", err)
		}
		if u.ID == slackUser {
			p, err := s.o.Store.LinkSlackByEmail(ctx, email, slackUser)
			if errors.Is(err, store.ErrNotFound) {
				return nil, nil
			}
			return p, err
		}
	}
	return nil, nil
}

// isSlackError says err is the Web API's {"ok":false,"error":code}.
func isSlackError(err error, code string) bool {
	var e slackapi.SlackErrorResponse
	return errors.As(err, &e) && e.Err == code
}

// roundFor reads the call and round an interaction is about, and whether
// the person may answer it: its assignee, a member of its team, or an
// admin. who names whom it is for.
func (s *Service) roundFor(ctx context.Context, p *store.SlackPerson, callID string, seq int) (call *store.Call, r *store.Round, may bool, err error) {
	if call, err = s.o.Store.Call(ctx, callID); err != nil {
		return nil, nil, false, err
	}
	if r, err = s.o.Store.Round(ctx, callID, seq); err != nil {
		return nil, nil, false, err
	}
	if p == nil {
		return call, r, false, nil
	}
	if p.IsAdmin {
		return call, r, true, nil
	}
	may, err = s.o.Store.IsAssignee(ctx, assignee(call, r), p.Name)
	return call, r, may, err
}

// assignee is whom a round is for: the owner for a round that asks the
// owner, else the call's assignee, else its owner.
func assignee(call *store.Call, r *store.Round) string {
	if r.Asks != nil && *r.Asks == store.AsksOwner || call.Assignee == nil {
		return call.Owner
	}
	return *call.Assignee
}

// forWhom is what a stranger who presses a button is told.
func forWhom(call *store.Call, r *store.Round) string {
	who := assignee(call, r)
	if team, ok := strings.CutPrefix(who, store.TeamPrefix); ok {
		return "This question is for the team " + team + "."
	}
	return "This question is for " + who + "."
}

// notWaiting is what a second answer is told: who answered when, or how
// the round ended.
func notWaiting(r *store.Round) string {
	switch {
	case r.Status == store.RoundAnswered && r.AnsweredBy != nil && r.AnsweredAt != nil:
		at := r.AnsweredAt.UTC()
		// Slack shows the time in the reader's own zone; the rest is the fallback.
		return fmt.Sprintf("Already answered by %s at <!date^%d^{time}|%s UTC>.", *r.AnsweredBy, at.Unix(), at.Format("15:04"))
	case r.Status == store.RoundExpired:
		return store.RoundExpiredMessage
	case r.Status == store.RoundPending:
		return ""
	}
	return store.NotWaitingMessage
}

// ephemeral tells one person something where they pressed: in the
// channel, only to them, or, for a press inside a modal (Decline,
// Cancel), in the modal itself.
func (s *Service) ephemeral(ctx context.Context, cb *slackapi.InteractionCallback, text string, blocks ...slackapi.Block) error {
	if cb.View.ID != "" {
		_, err := s.api.UpdateViewContext(ctx, *noticeView(text).View, "", cb.View.Hash, cb.View.ID)
		return err
	}
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if len(blocks) > 0 {
		opts = append(opts, slackapi.MsgOptionBlocks(blocks...))
	}
	_, err := s.api.PostEphemeralContext(ctx, cb.Channel.ID, cb.User.ID, opts...)
	return err
}

// askToLink tells a Slack user Rounds does not know to link their account
// once, from a button that opens Rounds, where they sign in.
func (s *Service) askToLink(ctx context.Context, cb *slackapi.InteractionCallback) error {
	text := "Rounds does not know who you are in Slack yet. Link your Rounds account once, then press the button again."
	button := slackapi.NewButtonBlockElement("link", "", slackapi.NewTextBlockObject(slackapi.PlainTextType, "Link my account", false, false))
	button.URL = s.linkURL(cb.User.ID)
	return s.ephemeral(ctx, cb, text,
		slackapi.NewSectionBlock(slackapi.NewTextBlockObject(slackapi.PlainTextType, text, false, false), nil, nil),
		slackapi.NewActionBlock("link", button))
}
