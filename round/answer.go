package round

import (
	"encoding/json"
	"errors"
	"net/url"

	"github.com/mcp-rounds/rounds/store"
)

// ErrNotWaiting says a round takes no answer: it was answered or has ended,
// or it is not its call's current round.
var ErrNotWaiting = errors.New("the round is not waiting for answers")

// Answer is a person's answer to a round, checked: what it decides, or
// what does not fit.
type Answer struct {
	// Questions are the round's questions, with what was posted and what is
	// wrong with it.
	Questions []Question
	// Actions are the choices posted from the browser, question by question.
	Actions []string
	// Misfit says what does not fit in an answer sent through the API.
	Misfit FieldErrors
	// Responses are the inputResponses to store; nil when the answer does
	// not fit.
	Responses json.RawMessage
	// Refusal, when set, ends the call with this message instead of sending
	// the answers: the person declined a sampling request, which the spec
	// answers by not sending the request again.
	Refusal string
}

// Fits reports whether the answer is to be stored.
func (a *Answer) Fits() bool { return a.Responses != nil }

// FormAnswer checks the answers to round r of call posted from the
// browser as values.
func FormAnswer(call *store.Call, r *store.Round, values url.Values) (*Answer, error) {
	qs, err := waiting(call, r)
	if err != nil {
		return nil, err
	}
	responses, actions, _ := decodeAnswers(qs, values)
	return decided(r, qs, actions, responses), nil
}

// APIAnswer checks an inputResponses object sent through the API for round
// r of call, with the same rules as the form. Content that fits is stored,
// and sent, exactly as given.
func APIAnswer(call *store.Call, r *store.Round, raw json.RawMessage) (*Answer, error) {
	qs, err := waiting(call, r)
	if err != nil {
		return nil, err
	}
	if misfit := checkAPIAnswers(qs, raw); len(misfit) > 0 {
		return &Answer{Questions: qs, Misfit: misfit}, nil
	}
	// Roots are answered from the server's settings, not by the caller.
	responses, err := addRootsAnswers(qs, raw)
	if err != nil {
		return nil, err
	}
	return decided(r, qs, nil, responses), nil
}

// waiting reads the questions of round r of call, if it waits for answers.
func waiting(call *store.Call, r *store.Round) ([]Question, error) {
	if r.Status != store.RoundPending || r.Seq != call.CurrentSeq {
		return nil, ErrNotWaiting
	}
	qs, err := Parse(r)
	if err != nil {
		return nil, err
	}
	WithRoots(qs, call)
	return qs, nil
}

// decided is what answering round r with responses (nil when they do not
// fit) does: a sampling request declined ends the call, unless the round is
// held on a session, where the server waits for the refusal.
func decided(r *store.Round, qs []Question, actions []string, responses json.RawMessage) *Answer {
	a := &Answer{Questions: qs, Actions: actions, Responses: responses}
	if responses != nil && r.HeldBy == nil && refused(qs, responses) {
		a.Refusal = refusedSampling
	}
	return a
}

// Counts are how many of an answer's questions were accepted, declined and
// cancelled.
type Counts struct {
	Accept, Decline, Cancel int
}

// Outcome is how an answer ends its round, from its actions alone, as
// rounds.outcome words it: any cancel cancels the round, all declines
// decline it. It counts the actions too.
func Outcome(responses json.RawMessage) (string, Counts) {
	var answers map[string]struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(responses, &answers)
	counts := map[string]int{}
	for _, a := range answers {
		counts[a.Action]++
	}
	n := Counts{Accept: counts[ActionAccept], Decline: counts[ActionDecline], Cancel: counts[ActionCancel]}
	switch {
	case n.Cancel > 0:
		return store.OutcomeCancelled, n
	case len(answers) > 0 && n.Decline == len(answers):
		return store.OutcomeDeclined, n
	}
	return store.OutcomeAnswered, n
}
