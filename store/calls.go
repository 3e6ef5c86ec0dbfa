package store

import (
	"encoding/json"
	"github.com/mcp-rounds/rounds/queue"
	"strings"
	"time"
)

// Call statuses.
const (
	CallQueued        = "queued"
	CallRunning       = "running"
	CallInputRequired = "input_required"
	CallComplete      = "complete"
	CallFailed        = "failed"
	CallCancelled     = "cancelled"
	CallExpired       = "expired"
)

// Round statuses.
const (
	RoundPending   = "pending"
	RoundAnswered  = "answered"
	RoundExpired   = "expired"
	RoundCancelled = "cancelled"
)

// Call is one MCP request a person started, and where it stands.
type Call struct {
	ID         string `db:"id"`
	ServerID   int64  `db:"server_id"`
	ServerName string `db:"server_name"`
	ServerURL  string `db:"server_url"`
	// The server's credentials, encrypted; see MCPServer.
	ServerHeaderName string          `db:"server_header_name"`
	ServerHeaderEnc  []byte          `db:"server_header_enc"`
	Owner            string          `db:"owner"`
	Method           string          `db:"method"`
	Target           string          `db:"target"`
	Title            string          `db:"title"`
	Arguments        json.RawMessage `db:"arguments"`
	Status           string          `db:"status"`
	CurrentSeq       int             `db:"current_seq"`
	Result           json.RawMessage `db:"result"`
	Error            *string         `db:"error"`
	Retryable        bool            `db:"retryable"`
	// Handshake is set once the call went out over a session one instance
	// holds (a handshake-era server).
	Handshake bool `db:"handshake"`
	// Protocol is the revision the call was started with (asked for, or
	// learnt for its tool); nil follows the server's setting.
	Protocol *string `db:"protocol"`
	// AsksOverSession is set when the tool wanted to ask over a 2025-11-25
	// session this call did not have.
	AsksOverSession bool `db:"asks_over_session"`
	// ServerProtocol is the server's pinned revision, or "auto".
	ServerProtocol string `db:"server_protocol"`
	// ServerHeldSeconds is the server's own deadline for held questions,
	// in seconds; zero means the default.
	ServerHeldSeconds float64 `db:"server_held_seconds"`
	// What the server may ask besides forms and pages, as it is set now;
	// see Server.
	ServerSampling  bool            `db:"server_sampling"`
	ServerRoots     bool            `db:"server_roots"`
	ServerRootsList json.RawMessage `db:"server_roots_list"`
	// Assignee answers the call's rounds: a user's name or "team:NAME";
	// nil means the owner. WebhookURL receives events about the call.
	Assignee   *string    `db:"assignee"`
	WebhookURL *string    `db:"webhook_url"`
	CreatedAt  time.Time  `db:"created_at"`
	UpdatedAt  time.Time  `db:"updated_at"`
	FinishedAt *time.Time `db:"finished_at"`
	// RetryAt is when a request the server could not take goes out again
	// by itself, RetrySince when that started, RetryReason why; nil when
	// no retry is waiting. See DeferRequest.
	RetryAt     *time.Time `db:"retry_at"`
	RetrySince  *time.Time `db:"retry_since"`
	RetryReason *string    `db:"retry_reason"`
	// ServerOAuthMode says who signs in at the server; see Server.
	ServerOAuthMode string `db:"server_oauth_mode"`
	// Restarts counts the times Rounds asked the server afresh by itself,
	// after it refused a round's state; ServerReplay says whether Rounds
	// may give a person's answers again to it (see AskAfresh).
	Restarts     int  `db:"restarts"`
	ServerReplay bool `db:"server_replay"`
	// Progress is what the server last said of a running request's
	// progress (see SetProgress), or nil.
	Progress json.RawMessage `db:"progress"`
	// The server runs the call as a task (tasks.go): TaskID is its id,
	// which never leaves Rounds; TaskStatus as last polled; TaskPollMs how
	// often the server asks to be polled; TaskExpiresAt when it may forget
	// the task; TaskKeys the keys of every question the task asked;
	// TaskStoppedAt when a person stopped it. All nil for a plain call.
	TaskID        *string    `db:"task_id"`
	TaskStatus    *string    `db:"task_status"`
	TaskPollMs    *int       `db:"task_poll_ms"`
	TaskExpiresAt *time.Time `db:"task_expires_at"`
	TaskKeys      []string   `db:"task_keys"`
	TaskStoppedAt *time.Time `db:"task_stopped_at"`
	// TaskStartedAt is when the server answered with the task; TaskSlot
	// the request that took a place among the server's tasks (TaskSlot);
	// ServerMaxTasks the server's limit, nil for DefaultMaxTasks; and
	// ServerRunsTasks whether the server ever ran a task.
	TaskStartedAt   *time.Time `db:"task_started_at"`
	TaskSlot        *int       `db:"task_slot"`
	ServerMaxTasks  *int       `db:"server_max_tasks"`
	ServerRunsTasks bool       `db:"server_runs_tasks"`
	// Agent is the MCP client that started the call through Rounds' front
	// door (/mcp/{server}); nil for a call started in a page or the API.
	Agent *Agent `db:"agent"`
	// ServerAgentQuestions is the server's AgentQuestions, read with the
	// call: whom an agent's call's rounds ask (see RoundAsks).
	ServerAgentQuestions string `db:"server_agent_questions"`
	// AgentTokenName names the API token the agent came with, while the
	// token is kept (never its secret).
	AgentTokenName *string `db:"agent_token_name"`
	// Approval is the call's approval, with its decisions, when the call
	// has one and its reader read it too (see WithApproval); nil otherwise.
	Approval *Approval `db:"-"`
}

// MaxTasks is how many tasks the call's server runs at once.
func (c *Call) MaxTasks() int {
	if c.ServerMaxTasks != nil {
		return *c.ServerMaxTasks
	}
	return DefaultMaxTasks
}

// Server is the call's server as it was read with the call.
func (c *Call) Server() *Server {
	return &Server{ID: c.ServerID, Name: c.ServerName, URL: c.ServerURL, Protocol: c.ServerProtocol,
		HeaderName: c.ServerHeaderName, HeaderValueEnc: c.ServerHeaderEnc,
		Sampling: c.ServerSampling, Roots: c.ServerRoots, RootsList: c.ServerRootsList,
		OAuthMode: c.ServerOAuthMode, ReplayAnswers: c.ServerReplay}
}

// IsTask reports whether the server runs the call as a task.
func (c *Call) IsTask() bool { return c.TaskID != nil }

// RunningProgress returns what the server last said of the progress of
// the call's running request, or nil: progress said of an earlier request
// of the call, or of a call no longer running, is not shown.
func (c *Call) RunningProgress() *Progress {
	if c.Progress == nil || (c.Status != CallQueued && c.Status != CallRunning) {
		return nil
	}
	var p Progress
	if json.Unmarshal(c.Progress, &p) != nil || p.Seq != c.CurrentSeq {
		return nil
	}
	return &p
}

// Progress is what a server said of a request's progress.
type Progress struct {
	Seq      int      `json:"seq"`
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`
	// Task says the progress is a task's status message, with no measure.
	Task bool `json:"task,omitempty"`
	// Waiting says the message is Rounds' own: the call waits for a place
	// among its server's tasks, unsent (see TaskSlot).
	Waiting bool `json:"waiting,omitempty"`
}

// Finished reports whether the call has reached an end state.
func (c *Call) Finished() bool {
	switch c.Status {
	case CallComplete, CallFailed, CallCancelled, CallExpired:
		return true
	}
	return false
}

// callColumns reads a call as a person sees it now: a call waiting on a
// round past its deadline reads expired at once, whether or not the expiry
// job has tidied it up yet.
const callColumns = `c.id::text as id, c.server_id, s.name as server_name, s.url as server_url,
	s.header_name as server_header_name, s.header_value_enc as server_header_enc, c.owner,
	c.method, c.target, c.title, c.arguments,
	case when ` + callPastDeadline + ` then 'expired' else c.status end as status,
	c.current_seq, c.result,
	case when ` + callPastDeadline + ` then '` + RoundExpiredMessage + `' else c.error end as error,
	c.retryable, c.handshake,
	c.protocol, c.asks_over_session, s.protocol as server_protocol, coalesce(extract(epoch from s.held_timeout), 0)::float8 as server_held_seconds,
	s.sampling as server_sampling, s.roots as server_roots, s.roots_list as server_roots_list,
	s.oauth_mode as server_oauth_mode, c.assignee, c.webhook_url, c.created_at, c.updated_at, c.finished_at, c.retry_at, c.retry_since, c.retry_reason,
	c.restarts, s.replay_answers as server_replay, c.progress,
	c.task_id, c.task_status, c.task_poll_ms, c.task_expires_at, c.task_keys, c.task_stopped_at,
	c.task_started_at, c.task_slot, s.max_tasks as server_max_tasks, s.runs_tasks as server_runs_tasks, c.agent,
	s.agent_questions as server_agent_questions,
	case when c.agent ? 'token_id' then (select t.name from api_tokens t where t.id = (c.agent->>'token_id')::bigint) end as agent_token_name`

// callColumnsShown is callColumns as a person is shown the call: a queued
// call whose request is out says running (see queue.RequestOut). It is worked
// out where the call is read, so a request costs no commit to say so.
var callColumnsShown = strings.Replace(callColumns, `else c.status end as status`,
	`when c.status = 'queued' and `+queue.RequestOut+` then 'running' else c.status end as status`, 1)

// callColumnsSending reads a call that is being created or sent, which
// no deadline has passed: its status is its own.
var callColumnsSending = strings.ReplaceAll(callColumns, callPastDeadline, "false")

// callPastDeadline is true of a call whose current round is pending past
// its deadline; rounds_pkey answers it. A held question is not: its holder
// cancels it towards the server at the deadline and the call goes on to the
// server's result.
const callPastDeadline = `(c.status = 'input_required' and exists (select 1 from rounds pr
	where pr.call_id = c.id and pr.seq = c.current_seq and pr.status = 'pending' and pr.expires_at <= now() and pr.held_by is null
	  and (pr.on_expiry = 'expire' or pr.expires_at < now() - interval '1 hour')))`

// What people are told of a round that takes no answers.
const (
	// RoundExpiredMessage is said of a round past its deadline, by its
	// call and to an answer that comes too late.
	RoundExpiredMessage = "The round expired before it was answered."
	// NotWaitingMessage is said to an answer for a round that has ended.
	NotWaitingMessage = "This round is no longer waiting for answers."
)

// AlreadyAnsweredMessage is said to an answer for a round someone else
// answered first; by is who, or "" when nobody is named.
func AlreadyAnsweredMessage(by string) string {
	if by == "" {
		return "This round was already answered."
	}
	return "This round was already answered by " + by + "."
}

// Round is one input_required answer from the server: its questions, and
// the person's answers once given. RequestState never leaves the server.
type Round struct {
	CallID        string          `db:"call_id"`
	Seq           int             `db:"seq"`
	InputRequests json.RawMessage `db:"input_requests"`
	RequestState  []byte          `db:"request_state"`
	Status        string          `db:"status"`
	Responses     json.RawMessage `db:"responses"`
	AnsweredBy    *string         `db:"answered_by"`
	AnsweredAt    *time.Time      `db:"answered_at"`
	ExpiresAt     time.Time       `db:"expires_at"`
	CreatedAt     time.Time       `db:"created_at"`
	// HeldBy names the instance holding a handshake-era server's session
	// while it waits for this round's answer; nil for 2026-07-28 rounds.
	HeldBy         *string    `db:"held_by"`
	ElicitationID  *string    `db:"elicitation_id"`
	URLCompletedAt *time.Time `db:"url_completed_at"`
	// Outcome is how the round ended: answered, declined, cancelled or
	// expired; nil while pending.
	Outcome *string `db:"outcome"`
	// Asking is which asking of the call the round belongs to: 0 for the
	// first, one more each time the server was asked afresh. Position is
	// its place in that asking, from 1.
	Asking   int `db:"asking"`
	Position int `db:"position"`
	// StateExpiredAt is when the server refused this round's state as the
	// answer came back: it no longer knew the question. AskedAfresh says
	// Rounds then asked the server afresh by itself.
	StateExpiredAt *time.Time `db:"state_expired_at"`
	AskedAfresh    bool       `db:"asked_afresh"`
	// Task says a task asked the round: its answers go to the server with
	// tasks/update.
	Task bool `db:"task"`
	// Process names the local server's process that asked (a 2026-07-28
	// round over stdio): only it can open the round's state.
	Process *string `db:"process"`
	// Asks is who the round asks when not the call's assignee: AsksAgent
	// or AsksOwner; nil for the assignee.
	Asks *string `db:"asks"`
	// AnsweredFor is whom the person who answered answered for, when not
	// themselves: the away person whose delegate they are, or the assignee
	// an admin or the owner answered in place of.
	AnsweredFor *string `db:"answered_for"`
	// HandedFrom, HandedTo, HandedBy and HandedAt record the round's last
	// hand-over (HandOn): whom it was asked of, whom it was given to, who
	// gave it and when; nil when it was never handed on.
	HandedFrom *string    `db:"handed_from"`
	HandedTo   *string    `db:"handed_to"`
	HandedBy   *string    `db:"handed_by"`
	HandedAt   *time.Time `db:"handed_at"`
}

// AnsweredAgain reports whether Rounds answered the round with the answers
// given to the same questions before the server was asked afresh.
func (r *Round) AnsweredAgain() bool {
	return r.AnsweredBy != nil && *r.AnsweredBy == AnsweredAgain
}

const roundColumns = `call_id::text as call_id, seq, input_requests, request_state, status, responses,
	answered_by, answered_at, expires_at, created_at, held_by, elicitation_id, url_completed_at, outcome,
	asking, coalesce(position, seq) as position, state_expired_at, asked_afresh, task, process, asks,
	answered_for, handed_from, handed_to, handed_by, handed_at`

// roundColumnsNow reads a round as a person sees it now: pending past its
// deadline is expired, unless its plan answers it at the deadline (see
// ExpireDueRounds).
const roundColumnsNow = `call_id::text as call_id, seq, input_requests, request_state,
	case when status = 'pending' and expires_at <= now() and (on_expiry = 'expire' or expires_at < now() - interval '1 hour')
	     then 'expired' else status end as status, responses,
	answered_by, answered_at, expires_at, created_at, held_by, elicitation_id, url_completed_at, outcome,
	asking, coalesce(position, seq) as position, state_expired_at, asked_afresh, task, process, asks,
	answered_for, handed_from, handed_to, handed_by, handed_at`
