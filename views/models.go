package views

import (
	"time"

	"github.com/mcp-rounds/rounds/forms"
)

// HomeVM is the home page: servers with their tools, and recent calls.
type HomeVM struct {
	Servers []ServerVM
	Recent  []CallSummary
}

// ServerVM is a server and its tools, or why they could not be listed.
type ServerVM struct {
	Name  string
	URL   string
	Href  string // the server's page
	Tools []ToolVM
	// MoreTools is how many tools the list leaves out; the server page has them all.
	MoreTools int
	Error     string
}

// ToolVM is one tool in a list.
type ToolVM struct {
	Name        string
	Title       string
	Description string
	Href        string
	// Icon is where Rounds serves the tool's icon, or "".
	Icon string
}

// CallSummary is one line of a list of calls.
type CallSummary struct {
	Href    string
	Server  string
	Target  string
	Status  string
	Created time.Time
	// Outcome is how the call's last round ended, if it did.
	Outcome string
}

// ToolPageVM is the form that starts a tool call.
type ToolPageVM struct {
	Server      string
	Name        string
	Title       string
	Description string
	Action      string
	Form        *forms.Form
	Errors      []ErrorLink
	// Assignee is the field naming who answers the call's rounds.
	Assignee AssigneeVM
	// What the tool says of itself (its annotations, hints a server gives,
	// not promises): ReadOnly that it changes nothing, Destructive that it
	// may change or delete things for good, which a person confirms before
	// the call starts (ConfirmError when they did not).
	ReadOnly     bool
	Destructive  bool
	ConfirmError string
	// Icon is where Rounds serves the tool's icon, or "".
	Icon string
}

// ErrorLink is an entry of an error summary, linking to its field.
type ErrorLink struct {
	Href    string
	Message string
}

// CallVM is the call page.
type CallVM struct {
	// Approval is the call's approval, when a rule of its server asked one.
	Approval *ApprovalVM
	ID       string
	Href     string
	Server   string
	Method   string
	// Target is what the call names, as the server titled it; Name is its
	// machine name, when that differs.
	Target string
	Name   string
	// Outcome is how the last round ended, if it did.
	Outcome   string
	Status    string
	Created   time.Time
	Current   *RoundVM
	History   []RoundVM
	Result    *ResultVM
	Error     string
	Retryable bool
	RetryHref string
	// Progress is what the server last said of the running request's
	// progress, or nil.
	Progress *ProgressVM
	// StopHref, while the call runs and the person may stop it, is where
	// the Stop button posts.
	StopHref string
	// RetryLabel names the retry button: starting afresh, with the answers
	// filled in, when the server forgot the call's questions.
	RetryLabel string
	Notice     string
	Live       bool
	LiveHref   string
	RoundsDone int
	// WatchHref is where an open round page learns that its round ended.
	WatchHref string
	// Unsent is what the person typed into a round that could no longer
	// take it, shown so that it is not lost.
	Unsent []UnsentVM
	// Reach is whom the rounds wait for and the webhook events sent.
	Reach ReachVM
	// AgainHref, when set, offers to start the call again over a 2025-11-25
	// session: its tool asks the handshake-era way.
	AgainHref string
	// Retry is set while a request the server could not take waits to be
	// sent again by itself.
	Retry *RetryVM
	// ConnectHref, for a call waiting on a sign-in, starts it.
	ConnectHref string
	// Task is set when the server runs the call as a task.
	Task *TaskVM
	// HandOn, set for whom may hand the waiting round on, offers it.
	HandOn *HandOnVM
}

// TaskVM is where a call's task stands on the server.
type TaskVM struct {
	// ExpiresAt is when the server may forget the task, if it said.
	ExpiresAt *time.Time
	// StoppedAt is when someone stopped the call and Rounds asked the
	// server to stop the task.
	StoppedAt *time.Time
}

// RoundVM is a round: the form to answer it, or the answers given.
type RoundVM struct {
	Seq        int
	Action     string
	Status     string
	ExpiresAt  time.Time
	AnsweredAt *time.Time
	AnsweredBy string
	// AnsweredFor is whom AnsweredBy answered for, when not themselves.
	AnsweredFor string
	// Handed is the round's last hand-over, if any.
	Handed    *HandedVM
	Questions []QuestionVM
	Errors    []ErrorLink
	// DraftAction is where the round's draft is saved; DraftSaved is when it
	// last was, if ever.
	DraftAction string
	DraftSaved  *time.Time
	// Held is set when a handshake-era server asked this mid-call and waits
	// on an open session until ExpiresAt.
	Held bool
	// Plan says what happens to the waiting round if nobody answers.
	Plan *RoundPlanVM
	// URLCompleted is when the server said a URL-mode step was finished.
	URLCompleted *time.Time
	// Single is the only question of a round of one, answered with a
	// button each for send, decline and cancel instead of a choice.
	Single *QuestionVM
	// Outcome is how an ended round ended: answered, declined, cancelled or
	// expired.
	Outcome string
	// StateRefused is when the server no longer knew this round's question
	// as its answer came back, StateAge how long after it was asked;
	// AskedAfresh says Rounds then asked the server afresh.
	StateRefused *time.Time
	StateAge     string
	AskedAfresh  bool
	// SameAs is the earlier round whose questions this one repeats after
	// the server was asked afresh; AnsweredAgain says its answers were
	// given again. A round waiting after the server was asked afresh has
	// AskedBefore, the round at its place before, and Changed when its
	// questions are not the same.
	SameAs        int
	AnsweredAgain bool
	AskedBefore   int
	Changed       bool
}

// QuestionVM is one question of a round.
type QuestionVM struct {
	Key     string
	Server  string
	Message string
	Kind    string
	// ActionName is the form name of the accept / decline / cancel choice.
	ActionName string
	ActionID   string
	// Action is the current choice: accept, decline or cancel.
	Action string
	// Form is the form to fill when accepting; nil for kinds without one.
	Form *forms.Form
	// Unsupported explains a question this client cannot answer.
	Unsupported string
	// URL is the page a URL-mode question asks the person to open.
	URL *URLVM
	// Error says what is wrong with the choice of answer.
	Error string
	// Single is set when this is the round's only question: the round's
	// buttons make its choice.
	Single bool
	// Sampling is a sampling request to write the model's reply to; the
	// reply is posted as ReplyName, and Reply is what was typed.
	Sampling   *SamplingVM
	Reply      string
	ReplyName  string
	ReplyID    string
	ReplyError string
	// Roots are what a roots/list question is answered with, automatically.
	Roots []RootVM
	// Answer describes the answer given, for earlier rounds: as label and
	// value per field where it can (AnswerLines), else as JSON.
	Answer      string
	AnswerJSON  string
	AnswerError string
	AnswerLines []AnswerLine
}

// AnswerLine is one field of an answer given: its label and the value, as
// a person reads them.
type AnswerLine struct {
	Label, Value string
}

// URLVM is the URL of a URL-mode question, for the person to examine
// before opening it: the full URL as sent, split around its host so that
// the host stands out.
type URLVM struct {
	Full                string
	Before, Host, After string // Full, split around the host ("" Host when there is none)
	Domain              string // the registrable domain of the host, when it has one
	// Href is set only for an http or https URL that may be opened.
	Href     string
	Warnings []URLWarning
}

// URLWarning is a reason to look twice at a URL.
type URLWarning struct {
	Kind string // scheme, invalid, hidden, http, userinfo, ip, port, punycode, unicode
	Text string
}

// ResultVM is a server's final result.
type ResultVM struct {
	IsError    bool
	Blocks     []ContentVM
	Structured string
	// Raw is the whole result as pretty JSON, for results of other shapes.
	Raw string
	// Description and Messages are a prompt's (prompts/get).
	Description string
	Messages    []MessageVM
	// Contents are a resource's (resources/read).
	Contents []ResourceContentVM
	// Kind is "tool", "prompt" or "resource".
	Kind string
}

// ContentVM is one content block of a result.
type ContentVM struct {
	Type     string
	Text     string
	MIMEType string
	// DataURL is set for images and audio whose data checked out; Size is
	// an image's size, Note why an image is not shown.
	DataURL string
	Size    string
	Note    string
	// CopyID, when set, is the id of a text block with a Copy button.
	CopyID string
	URI    string
	// Linkable is true only for http and https URIs.
	Linkable bool
	Name     string
	Title    string
}

// InboxVM is the inbox page.
type InboxVM struct {
	Items   []InboxItemVM
	Settled []SettledVM
}

// SettledVM is a round that left the inbox lately, and how it ended.
type SettledVM struct {
	Href       string
	Server     string
	Target     string
	Seq        int
	Outcome    string // answered, declined, cancelled or expired
	AnsweredBy string // set when someone else answered it
	Ended      time.Time
}

// InboxItemVM is a pending round in the inbox.
type InboxItemVM struct {
	Href      string
	Server    string
	Target    string
	Questions []string
	ExpiresAt time.Time
	Created   time.Time
	// For says whom the round waits for when that is not only the person:
	// "team approvers", or someone away whose delegate the person is;
	// From names who started the call, if someone else.
	For  string
	From string
}

// UnsentVM is what was typed for one question of a round that had ended.
type UnsentVM struct {
	Question string
	Lines    []AnswerLine
}

// ConnectionVM is whether the person is signed in at a server that asks
// for it, with what they can do about it.
type ConnectionVM struct {
	Connected bool
	// Shared is set when an admin connects for everyone.
	Shared bool
	// CanAct is set when this person may connect or disconnect.
	CanAct         bool
	ConnectHref    string
	DisconnectHref string
	Notice         string
}

// ProgressVM is a running request's progress: Value out of Max, or with
// Max zero a bar that only says work goes on; Message is the server's.
type ProgressVM struct {
	Message string
	Value   float64
	Max     float64
	// Waiting says the message is Rounds' own: why the call is not sent
	// yet, not what the server said.
	Waiting bool
}
