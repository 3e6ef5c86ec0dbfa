package engine

import (
	"encoding/json"
	"errors"
	"strings"

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

// serverError is the JSON-RPC error the server answered with, as
// {"code", "message"} and the HTTP status it came with when not 200
// (storable text), or nil for any other trouble.
func serverError(err error) json.RawMessage {
	out := struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Status  int    `json:"status,omitempty"`
		// Data goes back to the agent as the server sent it (e.g. the
		// requiredCapabilities of a -32021).
		Data json.RawMessage `json:"data,omitempty"`
	}{}
	var se *mcpclient.ServerError
	var he *mcpclient.HTTPError
	switch {
	case errors.As(err, &se):
		out.Code, out.Message, out.Data = se.Code, se.Message, se.Data
	case errors.As(err, &he) && he.Code != 0:
		out.Code, out.Message, out.Status, out.Data = he.Code, he.Message, he.Status, he.Data
	default:
		return nil
	}
	out.Message = strings.ToValidUTF8(strings.ReplaceAll(out.Message[:min(len(out.Message), 8<<10)], "\x00", ""), "")
	b, _ := json.Marshal(out)
	return b
}
