package store

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
