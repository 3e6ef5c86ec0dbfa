package slack

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// roundRef is the round a button or a modal is about: its Ask.ID is
// "CALL_ID:SEQ".
type roundRef struct {
	CallID string
	Seq    int
}

func (r roundRef) String() string { return r.CallID + ":" + strconv.Itoa(r.Seq) }

// parseRef reads a round's reference from a button's value or a modal's
// private_metadata.
func parseRef(s string) (roundRef, bool) {
	id, seq, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(seq)
	if !ok || err != nil || n < 1 || id == "" || len(id) > 64 {
		return roundRef{}, false
	}
	return roundRef{CallID: id, Seq: n}, true
}

// questions are the round's questions as an answer reads them.
func questions(call *store.Call, r *store.Round) ([]round.Question, error) {
	qs, err := round.Parse(r)
	if err != nil {
		return nil, err
	}
	round.WithRoots(qs, call)
	return qs, nil
}

// ask is what Slack shows of round r of call.
func ask(call *store.Call, r *store.Round, publicURL string) (Ask, error) {
	qs, err := questions(call, r)
	if err != nil {
		return Ask{}, err
	}
	title := call.Title
	if title == "" {
		title = call.Target
	}
	from := call.ServerName
	if call.Agent != nil && call.Agent.Name != "" {
		from = call.Agent.Name + " on " + call.ServerName
	}
	return Ask{ID: roundRef{CallID: call.ID, Seq: r.Seq}.String(), Title: title, From: from, For: assignee(call, r),
		Until: r.ExpiresAt, URL: publicURL + "/calls/" + url.PathEscape(call.ID), Questions: qs}, nil
}

// roundMessage is the message round r is posted as.
func roundMessage(call *store.Call, r *store.Round, publicURL string) ([]goslack.Block, string, error) {
	a, err := ask(call, r, publicURL)
	if err != nil {
		return nil, "", err
	}
	m := NewMessage(a)
	return m.Blocks, m.Text, nil
}

// endedMessage is the message of round r once it no longer waits for the
// people it was posted to: answered, declined, cancelled, expired or
// escalated.
func endedMessage(call *store.Call, r *store.Round, publicURL string) ([]goslack.Block, string, error) {
	a, err := ask(call, r, publicURL)
	if err != nil {
		return nil, "", err
	}
	m := Ended(a, end(call, r))
	return m.Blocks, m.Text, nil
}

// end says how round r ended.
func end(call *store.Call, r *store.Round) End {
	e := End{At: time.Now()}
	switch r.Status {
	case store.RoundAnswered:
		e.Outcome = OutcomeAnswered
		switch outcome, _ := round.Outcome(r.Responses); outcome {
		case store.OutcomeDeclined:
			e.Outcome = OutcomeDeclined
		case store.OutcomeCancelled:
			e.Outcome = OutcomeCancelled
		}
		if r.AnsweredBy != nil {
			e.By = *r.AnsweredBy
		}
		if r.AnsweredAt != nil {
			e.At = *r.AnsweredAt
		}
	case store.RoundExpired:
		e.Outcome, e.At = OutcomeExpired, r.ExpiresAt
		if r.ExpiresAt.After(time.Now()) {
			e.At = time.Now()
		}
	case store.RoundCancelled:
		e.Outcome = OutcomeCancelled
	default: // still waiting, for someone else
		e.Outcome, e.By = OutcomeEscalated, assignee(call, r)
	}
	return e
}
