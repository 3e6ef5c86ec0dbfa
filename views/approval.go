package views

import (
	"strings"
	"time"

	"github.com/mcp-rounds/rounds/forms"
)

// ApprovalVM is a call's approval on its page: Rounds' own question, asked
// before the server sees the call.
type ApprovalVM struct {
	// State is waiting, approved or declined; Reason why it was declined.
	State  string
	Reason string
	// Agent names the agent that asked, if one did; Caller the person the
	// call is for.
	Agent  string
	Caller string
	// The tool as its server describes it: text.
	Tool        string
	Description string
	Annotations []string
	// Asks words the rule: "2 of team:finance".
	Asks     string
	Needs    int
	Approved []string
	Waiting  []string
	// Arguments are those approvals count for now, Original those asked,
	// both as indented JSON; Changed says they differ.
	Arguments string
	Original  string
	Changed   bool
	ExpiresAt time.Time
	Decisions []DecisionVM
	// Form is the tool's own form, filled in with Arguments, for a person
	// who may decide; nil otherwise. Action is where it posts.
	Form   *forms.Form
	Action string
	// Refusal says why the person looking may not decide, when they may
	// not and it is worth saying (their own call).
	Refusal string
	Errors  []ErrorLink
	// ReasonValue is the reason typed, shown again with errors.
	ReasonValue string
	// HandOns are the hand-ons by admins, oldest first; Escalated, when
	// set, says whom its escalation added and when.
	HandOns   []ApprovalHandOnVM
	Escalated *EscalatedVM
	// HandOnAction, set for an admin while it waits, is where the form
	// that hands it on from one of Waiting to someone else posts.
	HandOnAction string
}

// ApprovalHandOnVM is an approval handed on by an admin from one person asked to
// another.
type ApprovalHandOnVM struct {
	From, To, By string
	At           time.Time
}

// EscalatedVM is an approval's escalation: whom it went to, and when.
type EscalatedVM struct {
	To string
	At time.Time
}

// DecisionVM is one decision on an approval.
type DecisionVM struct {
	By, For   string
	Decision  string
	Arguments string
	Reason    string
	At        time.Time
}

// Decider words who decided: "erin", or "erin for ann" for a delegate.
func (d DecisionVM) Decider() string {
	if d.For != "" && d.For != d.By {
		return d.By + " for " + d.For
	}
	return d.By
}

// names joins names for a sentence: "ann", "ann and bob", "ann, bob and cy".
func names(list []string) string {
	if len(list) <= 1 {
		return strings.Join(list, "")
	}
	return strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
}

func decisionWord(d string) string {
	if d == "approve" {
		return "Approved"
	}
	return "Declined"
}
