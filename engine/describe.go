package engine

import (
	"encoding/json"
	"errors"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// answersKept is what a call that failed for now tells the person.
const answersKept = "Your answers are kept; you can retry."

// describe is the message a call whose request failed is left with, in the
// words mcpclient.Describe has for the error, and whether retrying the same
// request could help.
func describe(err error) (string, bool) {
	p, _ := mcpclient.Describe(err)
	msg := p.Sentence()
	if p.Passing {
		msg += " " + answersKept
	}
	if p.Detail != "" {
		msg += mcpclient.DetailSeparator + p.Detail
	}
	return msg, p.Retry
}

// serverError is the JSON-RPC error object a server answered with (with
// an HTTP error status or not), as an agent's failed task reports it; nil
// for any other failure.
func serverError(err error) json.RawMessage {
	var code int64
	var msg string
	var se *mcpclient.ServerError
	var he *mcpclient.HTTPError
	switch {
	case errors.As(err, &se):
		code, msg = se.Code, se.Message
	case errors.As(err, &he) && he.Code != 0:
		code, msg = he.Code, he.Message
	default:
		return nil
	}
	b, _ := json.Marshal(struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, msg})
	return b
}
