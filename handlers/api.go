package handlers

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// isAPI reports whether the request is for the JSON API.
func isAPI(c echo.Context) bool {
	return strings.HasPrefix(c.Request().URL.Path, "/api/")
}

type apiError struct {
	Error apiMessage `json:"error"`
}

type apiMessage struct {
	Message string                       `json:"message"`
	Fields  map[string]map[string]string `json:"fields,omitempty"`
}

// apiCall is a call as the API shows it. The request state is not part of
// it, nor of anything else that leaves the server.
type apiCall struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Server string `json:"server"`
	Method string `json:"method"`
	Tool   string `json:"tool,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	URI    string `json:"uri,omitempty"`
	// Assignee answers the call's rounds: a person, or "team:NAME".
	Assignee  string          `json:"assignee,omitempty"`
	Round     *apiRound       `json:"round"`
	Result    json.RawMessage `json:"result"`
	Error     *apiMessage     `json:"error"`
	Retryable bool            `json:"retryable"`
	// Protocol is the revision the call was started with, when one was
	// asked for or learnt for its tool.
	Protocol string `json:"protocol,omitempty"`
	// AsksOverSession says the tool asks over a 2025-11-25 session, which
	// this call did not use: start it again with "protocol": "2025-11-25".
	AsksOverSession bool `json:"asksOverSession,omitempty"`
	// Retrying is set while a request the server could not take waits
	// to be sent again by itself.
	Retrying *apiRetrying `json:"retrying"`
	// Authorization is set while the call waits for its owner to sign in
	// at the server's authorization server.
	Authorization *apiAuthorization `json:"authorization,omitempty"`
	// AskedAfresh counts the times Rounds asked the server afresh after it
	// forgot the call's questions; Rounds then lists the call's rounds.
	AskedAfresh int            `json:"askedAfresh,omitempty"`
	Rounds      []apiRoundSeen `json:"rounds,omitempty"`
	CreatedAt   time.Time      `json:"createdAt"`
	UpdatedAt   time.Time      `json:"updatedAt"`
}

type apiRetrying struct {
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}

type apiRound struct {
	Seq           int             `json:"seq"`
	InputRequests json.RawMessage `json:"inputRequests"`
	ExpiresAt     time.Time       `json:"expiresAt"`
	// AnsweredBefore is what was answered to the round at this place
	// before the server was asked afresh, whose questions changed since.
	AnsweredBefore *apiAnswered `json:"answeredBefore,omitempty"`
}

type apiAnswered struct {
	Seq            int             `json:"seq"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

// apiRoundSeen is one round of a call the server forgot the questions of:
// how it ended, and what Rounds did.
type apiRoundSeen struct {
	Seq        int        `json:"seq"`
	Status     string     `json:"status"`
	AnsweredBy string     `json:"answeredBy,omitempty"`
	AnsweredAt *time.Time `json:"answeredAt,omitempty"`
	// StateRefusedAt is when the server no longer knew the round's question
	// as its answers came back.
	StateRefusedAt *time.Time `json:"stateRefusedAt,omitempty"`
	// AnsweredAgainFrom is the round whose answers Rounds gave again to
	// this one's same questions.
	AnsweredAgainFrom int `json:"answeredAgainFrom,omitempty"`
}

// withRounds says whether the API needs all of a call's rounds, not only
// the current one: where the server may have forgotten its questions (the
// call was asked afresh, or failed), so the story needs them.
func withRounds(call *store.Call, rounds []store.Round) bool {
	if call.Restarts > 0 || call.Status == store.CallFailed {
		return true
	}
	for _, r := range rounds {
		if r.Asking > 0 {
			return true
		}
	}
	return false
}

// apiCallOf is newAPICall with, for a call waiting on a sign-in, where to
// sign in.
func (h *Handler) apiCallOf(call *store.Call, rounds []store.Round) apiCall {
	out := newAPICall(call, rounds)
	if call.Status == store.CallAuthorizationRequired {
		out.Authorization = &apiAuthorization{Status: "required", URL: h.connectURL(call.ServerName, call.ID)}
	}
	return out
}

func newAPICall(call *store.Call, rounds []store.Round) apiCall {
	out := apiCall{
		ID: call.ID, Status: call.Status, Server: call.ServerName, Method: call.Method,
		Result: call.Result, Retryable: call.Retryable, CreatedAt: call.CreatedAt, UpdatedAt: call.UpdatedAt,
	}
	if call.Assignee != nil {
		out.Assignee = *call.Assignee
	}
	switch call.Method {
	case "prompts/get":
		out.Prompt = call.Target
	case "resources/read":
		out.URI = call.Target
	default:
		out.Tool = call.Target
	}
	if out.Result == nil {
		out.Result = json.RawMessage("null")
	}
	if call.Protocol != nil {
		out.Protocol = *call.Protocol
	}
	out.AsksOverSession = call.AsksOverSession
	if call.Error != nil {
		out.Error = &apiMessage{Message: *call.Error}
	}
	if call.RetryAt != nil && (call.Status == store.CallQueued || call.Status == store.CallRunning) {
		out.Retrying = &apiRetrying{At: *call.RetryAt, Message: views.RetryMessage(*call.RetryAt)}
		if call.RetryReason != nil {
			out.Retrying.Reason = *call.RetryReason
		}
	}
	out.AskedAfresh = call.Restarts
	refused := false
	for i := range rounds {
		refused = refused || rounds[i].StateExpiredAt != nil
	}
	for i := range rounds {
		r := &rounds[i]
		before := roundBefore(rounds, r)
		if call.Status == store.CallInputRequired && r.Seq == call.CurrentSeq && r.Status == store.RoundPending {
			out.Round = &apiRound{Seq: r.Seq, InputRequests: r.InputRequests, ExpiresAt: r.ExpiresAt}
			if before != nil && before.Responses != nil {
				out.Round.AnsweredBefore = &apiAnswered{Seq: before.Seq, InputResponses: before.Responses}
			}
			continue
		}
		if !refused {
			continue
		}
		seen := apiRoundSeen{Seq: r.Seq, Status: r.Status, AnsweredBy: answeredBy(r), AnsweredAt: r.AnsweredAt, StateRefusedAt: r.StateExpiredAt}
		if before != nil && r.AnsweredAgain() {
			seen.AnsweredAgainFrom = before.Seq
		}
		out.Rounds = append(out.Rounds, seen)
	}
	return out
}

// CallJSON renders a call as GET /api/v1/calls/{id} does, for the body of
// a webhook event.
func CallJSON(call *store.Call, rounds []store.Round) (json.RawMessage, error) {
	return mcpclient.MarshalRaw(newAPICall(call, rounds))
}

// writeJSON writes v without HTML-escaping, so server content comes back
// as sent.
func writeJSON(c echo.Context, status int, v any) error {
	b, err := mcpclient.MarshalRaw(v)
	if err != nil {
		return err
	}
	return c.JSONBlob(status, append(b, '\n'))
}
