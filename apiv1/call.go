// Package apiv1 holds the shapes of the JSON API (/api/v1) that more than
// the handlers write: a call as the API shows it is also the body of its
// webhook events.
package apiv1

import (
	"encoding/json"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// Call is a call as the API and its webhooks show it. The request state is not part of
// it, nor of anything else that leaves the server.
type Call struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Server string `json:"server"`
	Method string `json:"method"`
	Tool   string `json:"tool,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	URI    string `json:"uri,omitempty"`
	// Assignee answers the call's rounds: a person, or "team:NAME".
	Assignee  string          `json:"assignee,omitempty"`
	Round     *Round          `json:"round"`
	Result    json.RawMessage `json:"result"`
	Error     *Message        `json:"error"`
	Retryable bool            `json:"retryable"`
	// Protocol is the revision the call was started with, when one was
	// asked for or learnt for its tool.
	Protocol string `json:"protocol,omitempty"`
	// AsksOverSession says the tool asks over a 2025-11-25 session, which
	// this call did not use: start it again with "protocol": "2025-11-25".
	AsksOverSession bool `json:"asksOverSession,omitempty"`
	// Retrying is set while a request the server could not take waits
	// to be sent again by itself.
	Retrying *Retrying `json:"retrying"`
	// Authorization is set while the call waits for its owner to sign in
	// at the server's authorization server.
	Authorization *Authorization `json:"authorization,omitempty"`
	// AskedAfresh counts the times Rounds asked the server afresh after it
	// forgot the call's questions; Rounds then lists the call's rounds.
	AskedAfresh int `json:"askedAfresh,omitempty"`
	// Progress is what the server last said of the running request's
	// progress (notifications/progress), while the call runs.
	Progress *Progress `json:"progress,omitempty"`
	// Task is set when the server runs the call as a task. Its id stays
	// with Rounds.
	Task   *Task       `json:"task,omitempty"`
	Rounds []RoundSeen `json:"rounds,omitempty"`
	// Answered is the latest round of those read (the current one) a
	// person answered: who, and for whom when not themselves.
	Answered *RoundAnswered `json:"answered,omitempty"`
	// Agent is the MCP client that started the call through Rounds'
	// front door (/mcp/{server}); null for a call started otherwise.
	Agent *Agent `json:"agent"`
	// Approval is set for a call an approval rule of its server applied
	// to: who is asked, how many must approve, the arguments asked and
	// each decision.
	Approval  *Approval `json:"approval,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Agent names the MCP client that started a call: its clientInfo, the
// protocol it spoke, and the API token (by its name) or OAuth client it
// came with.
type Agent struct {
	Name     string `json:"name"`
	Version  string `json:"version,omitempty"`
	Protocol string `json:"protocol"`
	// Token is the API token's name; empty once the token is deleted, or
	// for an agent signed in through OAuth.
	Token string `json:"token,omitempty"`
	// OAuthClient is the OAuth client's name (or its id, when it gave no
	// name).
	OAuthClient string `json:"oauthClient,omitempty"`
}

// Task is where the server's task stands, as last polled.
type Task struct {
	// Status is the task's: working, input_required, completed, failed or
	// cancelled.
	Status string `json:"status"`
	// PollIntervalMs is how often the server asks to be polled.
	PollIntervalMs *int `json:"pollIntervalMs,omitempty"`
	// ExpiresAt is when the server may forget the task (its createdAt +
	// ttlMs); a question it asks cannot wait longer.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// StoppedAt is when someone stopped the call and Rounds asked the
	// server to stop the task; a task that finished all the same keeps
	// its result.
	StoppedAt *time.Time `json:"stoppedAt,omitempty"`
}

// Retrying says when a request the server could not take goes again.
type Retrying struct {
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}

// Round is a round waiting for answers.
type Round struct {
	Seq           int             `json:"seq"`
	InputRequests json.RawMessage `json:"inputRequests"`
	ExpiresAt     time.Time       `json:"expiresAt"`
	// Asks, for an agent's call, is whom the round asks besides the
	// call's assignee: "agent" (the agent answers over MCP; a person may
	// still answer it in Rounds) or "owner" (a URL-mode question, for the
	// person who started the call alone).
	Asks string `json:"asks,omitempty"`
	// AnsweredBefore is what was answered to the round at this place
	// before the server was asked afresh, whose questions changed since.
	AnsweredBefore *Answered `json:"answeredBefore,omitempty"`
	// HandedOn is the round's last hand-over, if it was handed on.
	HandedOn *HandedOn `json:"handedOn,omitempty"`
}

// HandedOn is a waiting round given to someone else: whom it was asked
// of, whom it went to, who gave it and when.
type HandedOn struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
}

// RoundAnswered says who answered a round, and on whose behalf when not
// their own: the person away whose delegate they are, or the assignee an
// admin or the owner answered in place of.
type RoundAnswered struct {
	Seq int        `json:"seq"`
	By  string     `json:"by"`
	For string     `json:"for,omitempty"`
	At  *time.Time `json:"at,omitempty"`
	// HandedOn is the round's last hand-over before it was answered.
	HandedOn *HandedOn `json:"handedOn,omitempty"`
}

// Answered is what was answered to a round.
type Answered struct {
	Seq            int             `json:"seq"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

// RoundSeen is one round of a call the server forgot the questions of:
// how it ended, and what Rounds did.
type RoundSeen struct {
	Seq         int        `json:"seq"`
	Status      string     `json:"status"`
	AnsweredBy  string     `json:"answeredBy,omitempty"`
	AnsweredFor string     `json:"answeredFor,omitempty"`
	AnsweredAt  *time.Time `json:"answeredAt,omitempty"`
	// StateRefusedAt is when the server no longer knew the round's question
	// as its answers came back.
	StateRefusedAt *time.Time `json:"stateRefusedAt,omitempty"`
	// AnsweredAgainFrom is the round whose answers Rounds gave again to
	// this one's same questions.
	AnsweredAgainFrom int `json:"answeredAgainFrom,omitempty"`
}

// WithRounds says whether the API needs all of a call's rounds, not only
// the current one: where the server may have forgotten its questions (the
// call was asked afresh, or failed), so the story needs them.
func WithRounds(call *store.Call, rounds []store.Round) bool {
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

// NewCall is how the API shows call, with its rounds (the current one, or
// all where the server forgot its questions: see WithRounds).
func NewCall(call *store.Call, rounds []store.Round) Call {
	out := Call{
		ID: call.ID, Status: call.Status, Server: call.ServerName, Method: call.Method,
		Result: call.Result, Retryable: call.Retryable, CreatedAt: call.CreatedAt, UpdatedAt: call.UpdatedAt,
	}
	if call.Assignee != nil {
		out.Assignee = *call.Assignee
	}
	out.Agent = newAgent(call)
	out.Approval = newApproval(call.Approval)
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
		out.Error = &Message{Message: *call.Error}
	}
	if call.RetryAt != nil && (call.Status == store.CallQueued || call.Status == store.CallRunning) {
		out.Retrying = &Retrying{At: *call.RetryAt, Message: retryMessage(*call.RetryAt)}
		if call.RetryReason != nil {
			out.Retrying.Reason = *call.RetryReason
		}
	}
	out.AskedAfresh = call.Restarts
	if p := call.RunningProgress(); p != nil {
		out.Progress = &Progress{Message: p.Message, Total: p.Total}
		if !p.Task && !p.Waiting { // a task says what it does, not how far it is; a call waiting, why
			out.Progress.Progress = &p.Progress
		}
	}
	if call.IsTask() {
		out.Task = &Task{Status: deref(call.TaskStatus), PollIntervalMs: call.TaskPollMs, ExpiresAt: call.TaskExpiresAt,
			StoppedAt: call.TaskStoppedAt}
	}
	refused := false
	for i := range rounds {
		refused = refused || rounds[i].StateExpiredAt != nil
	}
	for i := range rounds {
		r := &rounds[i]
		before := round.Before(rounds, r)
		if call.Status == store.CallInputRequired && r.Seq == call.CurrentSeq && r.Status == store.RoundPending {
			out.Round = &Round{Seq: r.Seq, InputRequests: r.InputRequests, ExpiresAt: r.ExpiresAt, Asks: deref(r.Asks),
				HandedOn: handedOn(r)}
			if before != nil && before.Responses != nil {
				out.Round.AnsweredBefore = &Answered{Seq: before.Seq, InputResponses: before.Responses}
			}
			continue
		}
		if r.Status == store.RoundAnswered && r.AnsweredBy != nil {
			out.Answered = &RoundAnswered{Seq: r.Seq, By: *r.AnsweredBy, For: deref(r.AnsweredFor), At: r.AnsweredAt,
				HandedOn: handedOn(r)}
		}
		if !refused {
			continue
		}
		seen := RoundSeen{Seq: r.Seq, Status: r.Status, AnsweredBy: answeredBy(r), AnsweredFor: deref(r.AnsweredFor),
			AnsweredAt: r.AnsweredAt, StateRefusedAt: r.StateExpiredAt}
		if before != nil && r.AnsweredAgain() {
			seen.AnsweredAgainFrom = before.Seq
		}
		out.Rounds = append(out.Rounds, seen)
	}
	return out
}

// handedOn is round r's last hand-over, nil when it was never handed on.
func handedOn(r *store.Round) *HandedOn {
	if r.HandedAt == nil {
		return nil
	}
	return &HandedOn{From: deref(r.HandedFrom), To: deref(r.HandedTo), By: deref(r.HandedBy), At: *r.HandedAt}
}

// newAgent is how the API names the agent that started call; nil for a
// call no agent started.
func newAgent(call *store.Call) *Agent {
	a := call.Agent
	if a == nil {
		return nil
	}
	out := &Agent{Name: a.Name, Version: a.Version, Protocol: a.Protocol, Token: deref(call.AgentTokenName),
		OAuthClient: a.OAuthClientName}
	if out.OAuthClient == "" {
		out.OAuthClient = a.OAuthClient
	}
	return out
}

// CallJSON renders a call as GET /api/v1/calls/{id} does, for the body of
// a webhook event.
func CallJSON(call *store.Call, rounds []store.Round) (json.RawMessage, error) {
	return mcpclient.MarshalRaw(NewCall(call, rounds))
}

// Message is an error as the API says it: a sentence, and the fields it
// is about.
type Message struct {
	Message string                       `json:"message"`
	Fields  map[string]map[string]string `json:"fields,omitempty"`
}

// Authorization says whether the caller must sign in at the server's
// authorization server first, and where (a page to open in a browser
// signed in as that person).
type Authorization struct {
	Status string `json:"status"` // required, connected or none
	URL    string `json:"url,omitempty"`
}

// answeredBy names who answered a round, if anyone did.
func answeredBy(r *store.Round) string {
	if r.AnsweredBy == nil {
		return ""
	}
	return *r.AnsweredBy
}

// Progress is a running request's progress, as the server said it.
type Progress struct {
	Message string `json:"message"`
	// Progress is how far the request got, null for a task (which says
	// only what it does).
	Progress *float64 `json:"progress"`
	Total    *float64 `json:"total"`
}

// retryMessage is what the API says while a request waits to be sent
// again by itself.
func retryMessage(at time.Time) string {
	return "The server is unreachable; trying again at " + at.UTC().Format("15:04:05") + " UTC."
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
