package apiv1

import (
	"encoding/json"
	"time"

	"github.com/mcp-rounds/rounds/store"
)

// Approval is a call's approval as the API shows it: Rounds' own
// question, asked before the server sees the call.
type Approval struct {
	// State is waiting, approved or declined.
	State string `json:"state"`
	// Needs is how many approvals of the final arguments it takes.
	Needs int `json:"needs"`
	// Asked are the people who may decide, fixed when it was asked;
	// Approved those whose approval of Arguments counts so far, and
	// Waiting those asked who have not given it (the caller left out).
	Asked    []string `json:"asked"`
	Approved []string `json:"approved"`
	Waiting  []string `json:"waiting"`
	// Arguments are those approvals now count for (what the server gets
	// once approved); OriginalArguments those the call came with.
	Arguments         json.RawMessage `json:"arguments"`
	OriginalArguments json.RawMessage `json:"originalArguments"`
	// Reason is why it ended declined, when it did.
	Reason    string     `json:"reason,omitempty"`
	ExpiresAt time.Time  `json:"expiresAt"`
	Decisions []Decision `json:"decisions"`
	// HandedOn are the hand-ons by admins, oldest first; EscalatedTo and
	// EscalatedAt say whom its escalation added and when, once it has.
	HandedOn    []HandOn   `json:"handedOn"`
	EscalatedTo string     `json:"escalatedTo,omitempty"`
	EscalatedAt *time.Time `json:"escalatedAt,omitempty"`
}

// HandOn is an approval handed on by an admin (By) from a person asked
// (From) to another (To).
type HandOn struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
}

// ApprovalAssignRequest is the body of POST
// /api/v1/calls/{id}/approval/assign.
type ApprovalAssignRequest struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Decision is one decision on an approval: who made it, for whom (the
// person asked, when a delegate decided), what, with which arguments
// and why.
type Decision struct {
	By        string          `json:"by"`
	For       string          `json:"for"`
	Decision  string          `json:"decision"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	At        time.Time       `json:"at"`
}

// ApprovalRequest is the body of POST /api/v1/calls/{id}/approval.
type ApprovalRequest struct {
	Decision  string          `json:"decision"`
	Arguments json.RawMessage `json:"arguments"`
	Reason    string          `json:"reason"`
}

func newApproval(a *store.Approval) *Approval {
	if a == nil {
		return nil
	}
	out := &Approval{State: a.State, Needs: a.Needs, Asked: orEmpty(a.Asked), Approved: orEmpty(a.Approved()),
		Arguments: a.Arguments, OriginalArguments: a.OriginalArguments, Reason: a.Reason, ExpiresAt: a.ExpiresAt,
		Decisions: []Decision{}}
	out.Waiting = []string{}
	if a.State == store.ApprovalWaiting {
		out.Waiting = orEmpty(a.Waiting())
	}
	for _, d := range a.Decisions {
		out.Decisions = append(out.Decisions, Decision{By: d.By, For: d.For, Decision: d.Decision,
			Arguments: d.Arguments, Reason: d.Reason, At: d.At})
	}
	out.HandedOn = []HandOn{}
	for _, h := range a.HandedOn {
		out.HandedOn = append(out.HandedOn, HandOn{From: h.From, To: h.To, By: h.By, At: h.At})
	}
	if a.EscalatedAt != nil && a.EscalateTo != nil {
		out.EscalatedTo, out.EscalatedAt = *a.EscalateTo, a.EscalatedAt
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
