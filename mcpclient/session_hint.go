package mcpclient

import (
	"encoding/json"
	"errors"
	"strings"
)

// AsksOverSession recognises a tool that asks its questions the
// handshake-era way (a server-initiated elicitation/create, as FastMCP's
// and the Python SDK's ctx.elicit do) failing on a 2026-07-28 request,
// which has no session to ask on. It returns what the server said, or "".
//
//   - FastMCP 4 answers a tool error: "elicitation via server-initiated
//     requests is unavailable on 2026-07-28 connections."
//   - mcp 2.0 answers HTTP 400, JSON-RPC -32600: "Cannot send
//     'elicitation/create': this transport context has no back-channel for
//     server-initiated requests."
func AsksOverSession(out *Outcome, err error) string {
	if err != nil {
		var refused *HTTPError
		var server *ServerError
		msg := ""
		switch {
		case errors.As(err, &refused):
			msg = refused.Message
		case errors.As(err, &server):
			msg = server.Message
		}
		if strings.Contains(msg, "no back-channel for server-initiated requests") {
			return msg
		}
		return ""
	}
	if out == nil || out.Result == nil {
		return ""
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(out.Result, &res) != nil || !res.IsError {
		return ""
	}
	for _, c := range res.Content {
		if c.Type == "text" && strings.Contains(c.Text, "via server-initiated requests is unavailable on 2026-07-28") {
			return c.Text
		}
	}
	return ""
}
