// Package round is what a round means: its questions read from what the
// server sent, the answers a person posts or the API sends decoded and
// checked, what an answer decides, and what a call is started with.
// Nothing here speaks HTTP or builds a page: views builds the view models
// from what this package reads.
package round

import (
	"encoding/json"
	"fmt"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// Answer actions, as the spec names them.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Question is one input request of a stored round, ready to render or to
// check answers against.
type Question struct {
	mcpclient.Question
	Message string
	Schema  json.RawMessage
	Form    *forms.Form
	// URL is the page a URL-mode question asks the person to open, as the
	// server sent it; "" for any other question.
	URL string
	// Unsupported says why this question cannot be answered here.
	Unsupported string
	// Error says what is wrong with the posted choice of answer.
	Error string
	// Sampling is a sampling request to write the reply to; Reply is what
	// was typed, ReplyError what is wrong with it.
	Sampling   *Sampling
	Reply      string
	ReplyError string
	// Roots and Auto are a roots/list question's answer, from the server's
	// settings: to show, and to send (see WithRoots).
	Roots []store.Root
	Auto  json.RawMessage
}

type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
}

// Parse reads a round's questions and builds a form for each, with posted
// names prefixed by the question's position (q0., q1., …), never by the
// server's keys.
func Parse(r *store.Round) ([]Question, error) {
	qs, err := mcpclient.ParseQuestions(r.InputRequests)
	if err != nil {
		return nil, err
	}
	out := make([]Question, len(qs))
	for i, q := range qs {
		out[i] = Question{Question: q}
		var p elicitParams
		if q.Params != nil {
			_ = json.Unmarshal(q.Params, &p)
		}
		out[i].Message = p.Message
		if q.Kind == mcpclient.KindURL {
			if p.URL == "" {
				out[i].Unsupported = "The server asks you to open a page but sent no address. You can decline or cancel it."
				continue
			}
			out[i].URL = p.URL
			continue
		}
		switch q.Kind {
		case mcpclient.KindSampling:
			s, summary, ok := parseSampling(q.Params)
			out[i].Sampling, out[i].Message = s, summary
			if !ok {
				out[i].Message = KindSummary(q)
				out[i].Unsupported = "The server sent a sampling request that cannot be read. You can decline it."
			}
			continue
		case mcpclient.KindRoots:
			out[i].Message = KindSummary(q)
			continue
		}
		if q.Kind != mcpclient.KindForm {
			out[i].Unsupported = "This kind of question cannot be answered here. You can decline or cancel it."
			continue
		}
		out[i].Schema = p.RequestedSchema
		form, err := forms.New(p.RequestedSchema, fmt.Sprintf("q%d.", i))
		if err != nil {
			out[i].Unsupported = "The server sent a form that cannot be shown (" + err.Error() + "). You can decline or cancel it."
			continue
		}
		form.LabelLoneValue(p.Message)
		out[i].Form = form
	}
	return out, nil
}

// ActionName is the posted name of question i's choice of answer.
func ActionName(i int) string { return fmt.Sprintf("q%d$action", i) }

// ActionID is the id of question i's choice of answer, for a link to it.
func ActionID(i int) string { return fmt.Sprintf("q%d-actions", i) }

// Choices are the answers chosen for a round's questions qs, as the form
// shows them: what the person posted (actions), else accept, except for a
// question that cannot be answered or asks to open a page, whose consent
// is never given on the person's behalf.
func Choices(qs []Question, actions []string) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		switch {
		case actions != nil:
			out[i] = actions[i]
		case q.Unsupported != "" || q.URL != "":
		default:
			out[i] = ActionAccept
		}
	}
	return out
}

// InZone has the forms of a round take date-times in the time zone name.
func InZone(qs []Question, name string) {
	for _, q := range qs {
		if q.Form != nil && q.Form.HasDateTime() {
			_ = q.Form.SetTimeZone(name)
		}
	}
}
