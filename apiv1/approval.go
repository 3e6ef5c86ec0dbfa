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
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
