package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CallApprovalRequired is the status of a call waiting for people's
// go-ahead before its server sees it (see Approval).
const CallApprovalRequired = "approval_required"

// Approval states.
const (
	ApprovalWaiting  = "waiting"
	ApprovalApproved = "approved"
	ApprovalDeclined = "declined"
)

// Decisions on an approval.
const (
	DecisionApprove = "approve"
	DecisionDecline = "decline"
)

// ErrForbidden is a person acting where they may not: deciding on an
// approval they are not asked, or on their own call.
var ErrForbidden = errors.New("forbidden")

func forbidden(msg string) error { return &Error{Kind: ErrForbidden, Message: msg} }

// NewApproval is the approval a call starts with, when a rule of its
// server's policy applies to it.
type NewApproval struct {
	// Rule is the rule as the policy words it, kept with the approval.
	Rule json.RawMessage
	// Ask names who decides: people and "team:NAME"s.
	Ask []string
	// Needs is how many approvals it takes; All, every person asked
	// (but the caller).
	Needs int
	All   bool
	// Expires is when it ends declined if it is still waiting.
	Expires time.Time
}

// Approval is a call's approval and the decisions on it so far.
type Approval struct {
	CallID string          `db:"call_id"`
	Rule   json.RawMessage `db:"rule"`
	Ask    []string        `db:"ask"`
	Needs  int             `db:"needs"`
	// Asked is who may decide, fixed when it was asked.
	Asked []string `db:"asked"`
	// Caller is the person whose call it is; they never decide.
	Caller string `db:"caller"`
	// Arguments are those approvals now count for; OriginalArguments the
	// call's own.
	Arguments         json.RawMessage `db:"arguments"`
	OriginalArguments json.RawMessage `db:"original_arguments"`
	// Epoch counts the changes of the arguments: only approvals of the
	// current epoch count.
	Epoch     int            `db:"epoch"`
	State     string         `db:"state"`
	Reason    string         `db:"reason"`
	CreatedAt time.Time      `db:"created_at"`
	ExpiresAt time.Time      `db:"expires_at"`
	EndedAt   *time.Time     `db:"ended_at"`
	Decisions []DecisionMade `db:"-"`
	// HandedOn are the hand-ons by admins, oldest first.
	HandedOn []ApprovalHandOver `db:"-"`
	// EscalateAt and EscalateTo are its escalation, when it has one;
	// EscalatedAt when it happened.
	EscalateAt  *time.Time `db:"escalate_at"`
	EscalateTo  *string    `db:"escalate_to"`
	EscalatedAt *time.Time `db:"escalated_at"`
}

// DecisionMade is one person's decision, in their own name or for
// someone asked.
type DecisionMade struct {
	By        string          `db:"by_name"`
	For       string          `db:"for_name"`
	Decision  string          `db:"decision"`
	Arguments json.RawMessage `db:"arguments"`
	Reason    string          `db:"reason"`
	Epoch     int             `db:"epoch"`
	At        time.Time       `db:"at"`
}

// Approved lists who approved the current arguments, once each.
func (a *Approval) Approved() []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range a.Decisions {
		if d.Decision == DecisionApprove && d.Epoch == a.Epoch && !seen[d.For] {
			seen[d.For] = true
			out = append(out, d.For)
		}
	}
	return out
}

// Waiting lists who is asked and has not yet approved the current
// arguments, the caller left out.
func (a *Approval) Waiting() []string {
	done := map[string]bool{a.Caller: true}
	for _, n := range a.Approved() {
		done[n] = true
	}
	var out []string
	for _, n := range a.Asked {
		if !done[n] {
			out = append(out, n)
		}
	}
	return out
}

const approvalColumns = `call_id::text as call_id, rule, ask, needs, asked, caller, arguments, original_arguments,
	epoch, state, reason, created_at, expires_at, ended_at, escalate_at, escalate_to, escalated_at`

const decisionColumns = `by_name, for_name, decision, arguments, reason, epoch, at`

// createApprovalTx stores call's approval as na asks it, in the call's
// own transaction, and tells the people asked. asked is fixed here: the
// people named and the members of the teams named, each once; the caller
// only when named. An approval nobody left can reach ends declined at once.
func (s *Store) createApprovalTx(ctx context.Context, tx *txn, call *Call, na *NewApproval) error {
	rule := na.Rule
	if len(rule) == 0 {
		rule = json.RawMessage(`{}`)
	}
	var asked []string
	err := tx.QueryRow(ctx, `
		insert into approvals (call_id, rule, ask, needs, asked, caller, arguments, original_arguments, expires_at)
		select $1, $2, $3, 1, coalesce(array_agg(n order by n), '{}'), $4, $5, $5, $6 from (
			select u.name as n from users u where u.name = any($3)
			union
			select u.name from team_members m join teams t on t.id = m.team_id join users u on u.id = m.user_id
			where 'team:' || t.name = any($3) and u.name <> $4) asked
		returning asked`, call.ID, rule, na.Ask, call.Owner, call.Arguments, na.Expires).Scan(&asked)
	if err != nil {
		return translate(err, "approval")
	}
	needs := na.Needs
	if na.All || needs < 1 {
		needs = 0
		for _, n := range asked {
			if n != call.Owner {
				needs++
			}
		}
		if needs == 0 && !na.All {
			needs = 1
		}
		needs = max(needs, 1)
	}
	if _, err := tx.Exec(ctx, `update approvals set needs = $2 where call_id = $1`, call.ID, needs); err != nil {
		return err
	}
	left, err := approvalReachableTx(ctx, tx, call.ID)
	if err != nil {
		return err
	}
	if !left {
		return s.endApprovalTx(ctx, tx, call.ID, ApprovalDeclined, QuorumOutOfReach(needs), nil)
	}
	return s.approvalWaitingTx(ctx, tx, call.ID, asked, call.Owner, na.Expires)
}

// QuorumOutOfReach is said of an approval the people left can no longer
// bring to needs approvals.
func QuorumOutOfReach(needs int) string {
	return fmt.Sprintf("Declined: the people left who may decide can no longer give the %d approval%s this call needs.",
		needs, map[bool]string{true: "", false: "s"}[needs == 1])
}

// approvalWaitingTx tells the people asked that an approval waits for
// them: a mail each (those with an address who want mail), and the call's
// webhook its approval.waiting event.
func (s *Store) approvalWaitingTx(ctx context.Context, tx *txn, callID string, asked []string, caller string, expires time.Time) error {
	if err := s.mailApprovalTx(ctx, tx, callID, asked, caller); err != nil {
		return err
	}
	if err := s.planApprovalEscalationTx(ctx, tx, callID); err != nil {
		return err
	}
	return s.webhookTx(ctx, tx, callID, EventApprovalWaiting)
}

// ApprovalSeq is the seq a mail about a call's approval goes by: no round
// has it.
const ApprovalSeq = 0

// EventApprovalWaiting is posted to a call's webhook when it waits for
// people's approval.
const EventApprovalWaiting = "approval.waiting"

// approvalReachableTx says whether the approval can still reach its
// needs: the approvals of its arguments so far, and the people asked who
// have not given one and still may (not the caller, not disabled, named or
// still a member of a team named).
func approvalReachableTx(ctx context.Context, tx *txn, callID string) (bool, error) {
	var ok bool
	err := tx.QueryRow(ctx, `
		with a as (select * from approvals where call_id = $1),
		counted as (select distinct d.for_name from approval_decisions d, a
			where d.call_id = a.call_id and d.decision = 'approve' and d.epoch = a.epoch)
		select (select count(*) from counted) + (
			select count(*) from a, unnest(a.asked) as p(name) join users u on u.name = p.name
			where p.name <> a.caller and not u.disabled and p.name not in (select for_name from counted)
			  and (p.name = any(a.ask) or exists (select 1 from team_members m join teams t on t.id = m.team_id
			       where m.user_id = u.id and 'team:' || t.name = any(a.ask)))) >= (select needs from a)`, callID).Scan(&ok)
	return ok, err
}

// endApprovalTx ends a waiting approval: approved, its call queued with
// the approved arguments and its first request enqueued (sent by the
// caller at once with d, else by River); declined, its call failed with
// reason, and the server never called.
func (s *Store) endApprovalTx(ctx context.Context, tx *txn, callID, state, reason string, d *Direct) error {
	if _, err := tx.Exec(ctx, `update approvals set state = $2, reason = $3, ended_at = now()
		where call_id = $1 and state = 'waiting'`, callID, state, reason); err != nil {
		return err
	}
	if state == ApprovalApproved {
		tag, err := tx.Exec(ctx, `update calls c set status = 'queued', arguments = a.arguments, updated_at = now()
			from approvals a where a.call_id = c.id and c.id = $1 and c.status = 'approval_required'`, callID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return conflict(ApprovalEndedMessage)
		}
		return s.enqueueTx(ctx, tx, d, callID, 0)
	}
	tag, err := tx.Exec(ctx, `update calls set status = 'failed', error = $2, retryable = false,
		updated_at = now(), finished_at = now() where id = $1 and status = 'approval_required'`, callID, reason)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return conflict(ApprovalEndedMessage)
	}
	return s.callFinishedTx(ctx, tx, callID)
}

// ApprovalEndedMessage is said to a decision on an approval that ended.
const ApprovalEndedMessage = "This approval has ended: no more decisions are taken."

// Approval reads a call's approval with its decisions, oldest first.
func (s *Store) Approval(ctx context.Context, callID string) (*Approval, error) {
	if !isUUID(callID) {
		return nil, notFound("approval")
	}
	var a *Approval
	err := s.read(ctx, func(q reader) error {
		var err error
		a, err = s.approvalTx(ctx, q, callID)
		return err
	})
	return a, err
}

// approvalNames joins names for a sentence: "ann", "ann and bob",
// "ann, bob and cy".
func approvalNames(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// ApprovalFacts is what deciding whether a call needs an approval reads of
// its server: its approval rules as written (servers.approvals), its tools
// as last listed, and how long its rounds wait.
type ApprovalFacts struct {
	Rules json.RawMessage `db:"approvals"`
	Tools json.RawMessage `db:"tools"`
}

// ServerApprovalFacts reads a server's ApprovalFacts.
func (s *Store) ServerApprovalFacts(ctx context.Context, serverID int64) (*ApprovalFacts, error) {
	rows, _ := s.pool.Query(ctx, `select approvals, tools from servers where id = $1`, serverID)
	f, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[ApprovalFacts])
	return f, translate(err, "server")
}

// ApprovalMail returns what a mail about a call's approval to recipient
// says (its InputRequests are the arguments asked), or ErrNotFound when
// there is none to send: the approval ended, recipient decided already or
// is not asked, or has no address or wants no mail.
func (s *Store) ApprovalMail(ctx context.Context, callID, recipient string) (*RoundMail, error) {
	rows, _ := s.pool.Query(ctx, `
		select u.email, s.name as server, c.method, c.target, c.owner, a.arguments::json as input_requests, a.expires_at
		from approvals a join calls c on c.id = a.call_id join servers s on s.id = c.server_id
		join users u on u.name = $2
		where a.call_id = $1 and a.state = 'waiting' and a.expires_at > now() and u.name = any(a.asked)
		  and u.name <> a.caller and u.email <> '' and u.email_rounds and not u.disabled
		  and not exists (select 1 from approval_decisions d where d.call_id = a.call_id and d.by_name = u.name)`,
		callID, recipient)
	m, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[RoundMail])
	return m, translate(err, "approval mail")
}

// WithApproval reads call's approval into it, if it has one: a tool call
// some rule of its server's approvals applied to.
func (s *Store) WithApproval(ctx context.Context, call *Call) error {
	if call.Method != "tools/call" {
		return nil
	}
	a, err := s.Approval(ctx, call.ID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	call.Approval = a
	return err
}

// AskedOfApproval reports whether person is asked to decide on call's
// approval, or is the delegate of someone asked who is away: they may
// see the call.
func (s *Store) AskedOfApproval(ctx context.Context, callID, person string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `select exists (select 1 from approvals a where a.call_id = $2::uuid and `+
		approvalAsks+`)`, person, callID).Scan(&ok)
	return ok, err
}
