package slack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// submit takes a modal's submission within Slack's 3 seconds: Rounds' own
// checks run at once, and what does not fit comes back in the reply as
// Slack's field errors (response_action "errors"), the modal kept open.
// An answer that fits closes the modal; it is stored, and the messages
// updated, after the reply. A resent submission is taken once.
func (s *Service) submit(ctx context.Context, cb *slackapi.InteractionCallback) (any, error) {
	ref, ok := parseRef(cb.View.PrivateMetadata)
	if !ok || cb.View.CallbackID != CallbackID {
		return nil, nil
	}
	call, r, err := s.read(ctx, ref.CallID, ref.Seq)
	if err != nil || r == nil {
		return nil, err
	}
	person, err := s.person(ctx, cb.User.ID, assignee(call, r))
	if err != nil {
		return nil, err
	}
	_, _, may, err := s.roundFor(ctx, person, ref.CallID, ref.Seq)
	if err != nil {
		return nil, err
	}
	if !may {
		return noticeView(forWhom(call, r)), nil
	}
	if msg := notWaiting(r); msg != "" {
		return noticeView(msg), nil
	}
	qs, err := questions(call, r)
	if err != nil {
		return nil, err
	}
	values := Values(qs, cb.View.State)
	a, err := round.FormAnswer(call, r, values)
	if errors.Is(err, round.ErrNotWaiting) {
		return noticeView(store.NotWaitingMessage), nil
	}
	if err != nil {
		return nil, err
	}
	if !a.Fits() {
		byBlock, rest := FieldErrors(a.Questions)
		if len(byBlock) == 0 {
			return noticeView(strings.Join(append(rest, "Answer this in Rounds."), " ")), nil
		}
		return ErrorsResponse(byBlock), nil
	}
	// The same view submitted with the same state is one submission, however
	// often Slack sends it; a corrected one after field errors is another.
	state, _ := json.Marshal(cb.View.State)
	sum := sha256.Sum256(state)
	first, err := s.o.Store.TakeSlackInteraction(ctx, "view:"+cb.View.ID+":"+hex.EncodeToString(sum[:8]))
	if err != nil || !first {
		return nil, err
	}
	user := cb.User.ID
	s.later(ctx, func(ctx context.Context) {
		if msg := s.store(ctx, person, ref.CallID, ref.Seq, values); msg != "" {
			s.tell(ctx, user, msg)
		}
	})
	return nil, nil
}

// noticeView replaces the modal with a sentence: why the answer is not taken.
func noticeView(text string) *slackapi.ViewSubmissionResponse {
	return slackapi.NewUpdateViewSubmissionResponse(&slackapi.ModalViewRequest{
		Type:  slackapi.VTModal,
		Title: slackapi.NewTextBlockObject(slackapi.PlainTextType, "Rounds", false, false),
		Close: slackapi.NewTextBlockObject(slackapi.PlainTextType, "Close", false, false),
		Blocks: slackapi.Blocks{BlockSet: []slackapi.Block{
			slackapi.NewSectionBlock(slackapi.NewTextBlockObject(slackapi.MarkdownType, text, false, false), nil, nil),
		}},
	})
}

// tell says something to a person in their direct messages with the app:
// what became of an answer given from a modal, which has no channel.
func (s *Service) tell(ctx context.Context, user, text string) {
	ch, _, _, err := s.api.OpenConversationContext(ctx, &slackapi.OpenConversationParameters{Users: []string{user}})
	if err == nil {
		_, _, err = s.api.PostMessageContext(ctx, ch.ID, slackapi.MsgOptionText(text, false))
	}
	if err != nil {
		s.o.Log.WarnContext(ctx, "slack: could not tell a person what became of their answer", "err", err)
	}
}
