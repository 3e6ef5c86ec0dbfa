package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// NewCall is what starting a call needs.
type NewCall struct {
	ServerID  int64
	Owner     string
	Method    string
	Target    string
	Title     string
	Arguments json.RawMessage
	// Assignee answers the rounds: a user's name or "team:NAME"; empty
	// means the owner. WebhookURL, when set, receives events.
	Assignee   string
	WebhookURL string
	// Audit, when set, is written in the call's own transaction; its
	// Target is the new call's id.
	Audit *AuditEntry
	// Protocol starts the call with this revision; "" takes the one learnt
	// for the tool, if any, else the server's setting.
	Protocol string
	// ID, when set (see NewCallID), is the new call's id: a caller can
	// listen for the call's changes before it exists.
	ID string
	// Deadlines, when set, override the server's for this call's rounds.
	Deadlines *Deadlines
	// Agent, when set, is the MCP client that started the call through
	// Rounds' front door. With no Assignee, the server's AgentQuestions
	// then says who answers: the owner ("agent" and "owner"), or the
	// person or team it names.
	Agent *Agent
	// Approval, when set, has the call wait for people's go-ahead
	// (approval_required) with no request enqueued.
	Approval *NewApproval
}

// NewCallID returns a fresh call id (a random UUID).
func NewCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// CreateCall stores a queued call and enqueues its first request for
// River, in one transaction that also writes the audit entry and returns
// the call.
func (s *Store) CreateCall(ctx context.Context, nc NewCall) (*Call, error) {
	call, _, err := s.CreateCallDirect(ctx, nc, 0)
	return call, err
}

// CreateCallDirect is CreateCall for a caller that sends the first request
// itself, at once: its River job, the safety net, is scheduled after from
// now, and the request is returned with the call (see Direct). A zero
// after leaves the request to River, and returns no Direct.
func (s *Store) CreateCallDirect(ctx context.Context, nc NewCall, after time.Duration) (*Call, *Direct, error) {
	if len(nc.Arguments) == 0 {
		nc.Arguments = json.RawMessage(`{}`)
	}
	var call *Call
	var sending *Direct
	err := s.announcedTx(ctx, func(tx *txn) error {
		var err error
		call, sending, err = s.createCallTx(ctx, tx, nc, after)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return call, sending, nil
}

// createCallTx stores the call and enqueues its first request: as River's
// job, or, with after, as the request it returns for its caller to send at
// once (see Direct).
func (s *Store) createCallTx(ctx context.Context, tx *txn, nc NewCall, after time.Duration) (*Call, *Direct, error) {
	if len(nc.Arguments) == 0 {
		nc.Arguments = json.RawMessage(`{}`)
	}
	if nc.Assignee == "" && nc.Agent == nil {
		nc.Assignee = nc.Owner
	}
	var call *Call
	status := CallQueued
	if nc.Approval != nil {
		status, after = CallApprovalRequired, 0
	}
	d := newDirect(after)
	err := func() error {
		rows, _ := tx.Query(ctx, `
			with c as (
				insert into calls (id, server_id, owner, method, target, arguments, protocol, assignee, webhook_url, title, agent, status)
				values (coalesce(nullif($10, '')::uuid, gen_random_uuid()), $1, $2, $3, $4, $5, coalesce(nullif($6, ''),
					(select protocol from tool_protocols where server_id = $1 and tool = $4 and $3 = 'tools/call')),
					coalesce(nullif($7, ''), (select case when agent_questions in ('agent', 'owner') then $2
						else agent_questions end from servers where id = $1), $2), nullif($8, ''), $9, $11, $12)
				returning *
			)
			select `+callColumnsSending+`, `+callTTLColumn+`
			from c join servers s on s.id = c.server_id`,
			nc.ServerID, nc.Owner, nc.Method, nc.Target, nc.Arguments, nc.Protocol, nc.Assignee, nc.WebhookURL, nc.Title, nc.ID, nc.Agent, status)
		created, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[callWithTTL])
		if err != nil {
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "23503" {
				return notFound("server") // deleted meanwhile (see ServerToCall)
			}
			return translate(err, "call")
		}
		call = &created.Call
		// A request sent at once needs no second read of its call.
		sending := created.Call
		d.knows(&Attempt{Call: &sending, RoundTTL: created.roundTTL()}, attemptSkip{call: true})
		if err := setCallDeadlinesTx(ctx, tx, call.ID, nc.Deadlines); err != nil {
			return err
		}
		if nc.Audit != nil {
			entry := *nc.Audit
			entry.Target = call.ID
			entry.Detail = withAgent(entry.Detail, nc.Agent)
			if err := auditTx(ctx, tx, entry); err != nil {
				return err
			}
		}
		if nc.Approval != nil {
			return s.createApprovalTx(ctx, tx, call, nc.Approval)
		}
		return s.enqueueTx(ctx, tx, d, call.ID, 0)
	}()
	if err != nil {
		return nil, nil, err
	}
	return call, d.sent(), nil
}

// withAgent is a call's audit detail naming the agent that started it, if
// one did: its name and version, and its API token's id or OAuth client.
// The caller's map is left as it was.
func withAgent(detail map[string]any, a *Agent) map[string]any {
	if a == nil {
		return detail
	}
	out := make(map[string]any, len(detail)+3)
	maps.Copy(out, detail)
	out["agent"] = a.Label()
	if a.TokenID != nil {
		out["agent_token_id"] = *a.TokenID
	}
	if a.OAuthClient != "" {
		out["agent_oauth_client"] = a.OAuthClient
	}
	return out
}
