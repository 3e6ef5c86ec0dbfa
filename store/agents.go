package store

import (
	"context"
	"strings"
)

// Agents are the MCP clients that reach servers through Rounds' front door,
// /mcp/{server} (package agents). A call one of them starts carries its
// Agent; who answers the call's questions follows the server's
// AgentQuestions.

// Who a round of an agent's call asks, when not the call's assignee.
const (
	// AsksAgent: the agent answers over MCP; it declared it can.
	AsksAgent = "agent"
	// AsksOwner: the call's owner, for a URL-mode question, which only the
	// person who started the call may complete.
	AsksOwner = "owner"
)

// AgentQuestions values besides a person's name or "team:NAME"; both words
// are reserved, so no account may take them as its name.
const (
	AgentQuestionsAgent = "agent"
	AgentQuestionsOwner = "owner"
)

// Agent is the MCP client that started a call through Rounds' front door,
// stored with the call as JSON.
type Agent struct {
	// Name and Version are its clientInfo.
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Protocol is the revision it speaks to Rounds.
	Protocol string `json:"protocol"`
	// TokenID is the API token it came with; OAuthClient and
	// OAuthClientName the OAuth client, when it signed in that way.
	TokenID         *int64 `json:"token_id,omitempty"`
	OAuthClient     string `json:"oauth_client,omitempty"`
	OAuthClientName string `json:"oauth_client_name,omitempty"`
	// Can is what it declared it can answer itself.
	Can AgentCan `json:"can"`
	// Session is its Mcp-Session-Id (a 2025-11-25 agent); Task says it was
	// given a task (the tasks extension) rather than an open request.
	Session string `json:"session,omitempty"`
	Task    bool   `json:"task,omitempty"`
	// RequestID is the JSON-RPC id of the agent's request that started the
	// call, as sent (JSON), so its notifications/cancelled finds the call.
	RequestID string `json:"request_id,omitempty"`
	// LogLevel is the least severe of the server's log messages the agent
	// asked for (a session's logging/setLevel, a request's _meta); empty,
	// it asked for none.
	LogLevel string `json:"log_level,omitempty"`
}

// AgentCan is what an agent declared it can answer.
type AgentCan struct {
	Form     bool `json:"form,omitempty"`
	URL      bool `json:"url,omitempty"`
	Sampling bool `json:"sampling,omitempty"`
	Roots    bool `json:"roots,omitempty"`
}

// Label names the agent for people: "Claude Code 2.1" or its OAuth client.
func (a *Agent) Label() string {
	if a == nil {
		return ""
	}
	name := a.Name
	if name == "" {
		name = a.OAuthClientName
	}
	if name == "" {
		name = "an agent"
	}
	if a.Version != "" {
		return name + " " + a.Version
	}
	return name
}

// ReservedNameMessage says why an account may not be named "agent" or
// "owner" (migration 00077 refuses them).
const ReservedNameMessage = `The names "agent" and "owner" are reserved: they say who answers an agent's questions. Choose another name.`

// ReservedName reports whether no account may take name: "agent" and
// "owner", in any case.
func ReservedName(name string) bool {
	n := strings.ToLower(name)
	return n == AgentQuestionsAgent || n == AgentQuestionsOwner
}

// CheckAgentQuestions checks a server's AgentQuestions setting: "agent",
// "owner", or an enabled person's name or "team:NAME", as other assignee
// settings are checked (CheckAssignee).
func (s *Store) CheckAgentQuestions(ctx context.Context, setting string) error {
	switch {
	case setting == AgentQuestionsAgent || setting == AgentQuestionsOwner:
		return nil
	case strings.TrimSpace(setting) == "" || len(setting) > 200:
		return &Error{Kind: ErrInvalid, Message: `Who answers agents' questions is "agent", "owner", a person's name or team:NAME.`}
	}
	return s.CheckAssignee(ctx, setting)
}

// SetServerAgentQuestions sets who answers the questions of calls agents
// start on the server (see CheckAgentQuestions).
func (s *Store) SetServerAgentQuestions(ctx context.Context, name, setting string) error {
	if err := s.CheckAgentQuestions(ctx, setting); err != nil {
		return err
	}
	s.forgetServers() // see ServerToCall
	return s.execOne(ctx, "server "+name,
		`update servers set agent_questions = $2, updated_at = now() where name = $1`, name, setting)
}

// RoundAsks decides whom a round of a call asks besides its assignee, from
// the kinds of its questions (mcpclient.KindForm, KindURL, KindSampling,
// KindRoots): AsksAgent when the server lets the agent answer
// (agentQuestions "agent") and the agent declared every kind the round
// asks, or when the round asks only URL-mode questions and the agent
// declared URL mode; AsksOwner when the round asks a URL-mode question and
// the call's assignee is not its owner (only the person who started the
// call may complete one); nil otherwise: the assignee, as for any call.
func RoundAsks(agentQuestions string, agent *Agent, owner, assignee string, kinds []string) *string {
	if agent == nil || len(kinds) == 0 {
		return nil
	}
	declared := map[string]bool{"form": agent.Can.Form, "url": agent.Can.URL,
		"sampling": agent.Can.Sampling, "roots": agent.Can.Roots}
	all, url, onlyURL := true, false, true
	for _, k := range kinds {
		all = all && declared[k]
		url = url || k == "url"
		onlyURL = onlyURL && k == "url"
	}
	switch {
	case all && (agentQuestions == AgentQuestionsAgent || onlyURL):
		return new(AsksAgent)
	case url && assignee != owner:
		return new(AsksOwner)
	}
	return nil
}
