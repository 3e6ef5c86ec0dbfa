package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
	// The server's credentials, encrypted; see CallHeader.
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
	c.restarts, s.replay_answers as server_replay`

// callPastDeadline is true of a call whose current round is pending past
// its deadline; rounds_pkey answers it. A held question is not: its holder
// cancels it towards the server at the deadline and the call goes on to the
// server's result.
const callPastDeadline = `(c.status = 'input_required' and exists (select 1 from rounds pr
	where pr.call_id = c.id and pr.seq = c.current_seq and pr.status = 'pending' and pr.expires_at <= now() and pr.held_by is null))`

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
	// answer came back: it no longer knew the question.
	StateExpiredAt *time.Time `db:"state_expired_at"`
}

// AnsweredAgain reports whether Rounds answered the round with the answers
// given to the same questions before the server was asked afresh.
func (r *Round) AnsweredAgain() bool {
	return r.AnsweredBy != nil && *r.AnsweredBy == AnsweredAgain
}

const roundColumns = `call_id::text as call_id, seq, input_requests, request_state, status, responses,
	answered_by, answered_at, expires_at, created_at, held_by, elicitation_id, url_completed_at, outcome,
	asking, coalesce(position, seq) as position, state_expired_at`

// roundColumnsNow reads a round as a person sees it now: pending past its
// deadline is expired.
const roundColumnsNow = `call_id::text as call_id, seq, input_requests, request_state,
	case when status = 'pending' and expires_at <= now() then 'expired' else status end as status, responses,
	answered_by, answered_at, expires_at, created_at, held_by, elicitation_id, url_completed_at, outcome,
	asking, coalesce(position, seq) as position, state_expired_at`

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
}

// NewCallID returns a fresh call id (a random UUID).
func NewCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// CreateCall stores a queued call and enqueues its first request, in one
// transaction that also writes the audit entry and returns the call.
func (s *Store) CreateCall(ctx context.Context, nc NewCall) (*Call, error) {
	if len(nc.Arguments) == 0 {
		nc.Arguments = json.RawMessage(`{}`)
	}
	var call *Call
	err := s.announcedTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		call, err = s.createCallTx(ctx, tx, nc)
		return err
	})
	if err != nil {
		return nil, err
	}
	return call, nil
}

func (s *Store) createCallTx(ctx context.Context, tx pgx.Tx, nc NewCall) (*Call, error) {
	if len(nc.Arguments) == 0 {
		nc.Arguments = json.RawMessage(`{}`)
	}
	if nc.Assignee == "" {
		nc.Assignee = nc.Owner
	}
	var call *Call
	err := func() error {
		rows, _ := tx.Query(ctx, `
			with c as (
				insert into calls (id, server_id, owner, method, target, arguments, protocol, assignee, webhook_url, title)
				values (coalesce(nullif($10, '')::uuid, gen_random_uuid()), $1, $2, $3, $4, $5, coalesce(nullif($6, ''),
					(select protocol from tool_protocols where server_id = $1 and tool = $4 and $3 = 'tools/call')),
					$7, nullif($8, ''), $9)
				returning *
			)
			select `+strings.ReplaceAll(callColumns, callPastDeadline, "false")+`
			from c join servers s on s.id = c.server_id`,
			nc.ServerID, nc.Owner, nc.Method, nc.Target, nc.Arguments, nc.Protocol, nc.Assignee, nc.WebhookURL, nc.Title, nc.ID)
		var err error
		if call, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call]); err != nil {
			return translate(err, "call")
		}
		if nc.Audit != nil {
			entry := *nc.Audit
			entry.Target = call.ID
			if err := auditTx(ctx, tx, entry); err != nil {
				return err
			}
		}
		return s.enqueueTx(ctx, tx, call.ID, 0)
	}()
	return call, err
}

// CreateCallFor reads the enabled server named server and lets decide
// check the call against it, then stores the call as CreateCall does, all
// in one transaction. decide must not wait on the network; its error rolls
// back and is returned as it is.
func (s *Store) CreateCallFor(ctx context.Context, server string, decide func(*Server) (NewCall, error)) (*Call, error) {
	var call *Call
	err := s.announcedTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `select `+serverColumns+` from servers where name = $1 and enabled`, server)
		srv, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Server])
		if err != nil {
			return translate(err, "server "+server)
		}
		nc, err := decide(srv)
		if err != nil {
			return err
		}
		nc.ServerID = srv.ID
		call, err = s.createCallTx(ctx, tx, nc)
		return err
	})
	if err != nil {
		return nil, err
	}
	return call, nil
}

// Call returns a call with its server's name.
func (s *Store) Call(ctx context.Context, id string) (*Call, error) {
	rows, _ := s.pool.Query(ctx, `select `+callColumns+`
		from calls c join servers s on s.id = c.server_id where c.id = $1`, id)
	c, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
	return c, translate(err, "call")
}

// CallAndRounds returns a call and its rounds from seq on (from its
// current round when seq is negative), read together in one round trip and
// one transaction (a batch).
func (s *Store) CallAndRounds(ctx context.Context, id string, seq int) (*Call, []Round, error) {
	from := "$2"
	if seq < 0 {
		from = "(select current_seq from calls where id = $1) and $2 < 0"
	}
	b := &pgx.Batch{}
	var call *Call
	var rounds []Round
	b.Queue(`select `+callColumns+` from calls c join servers s on s.id = c.server_id where c.id = $1`, id).
		Query(func(rows pgx.Rows) error {
			var err error
			call, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
			return err
		})
	b.Queue(`select `+roundColumnsNow+` from rounds where call_id = $1 and seq >= `+from+` order by seq`, id, seq).
		Query(func(rows pgx.Rows) error {
			var err error
			rounds, err = pgx.CollectRows(rows, pgx.RowToStructByName[Round])
			return err
		})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, translate(err, "call")
	}
	return call, rounds, nil
}

// CallPage returns a call, all its rounds and the draft of its current
// round (nil when there is none), read together in one round trip and one
// transaction (a batch).
func (s *Store) CallPage(ctx context.Context, id string) (*Call, []Round, *Draft, error) {
	call, rounds, draft, _, err := s.callPage(ctx, id, "")
	return call, rounds, draft, err
}

// CallPageWaiting is CallPage with, in the same batch, the count of rounds
// waiting for person (as WaitingCount) that the page's navigation shows.
func (s *Store) CallPageWaiting(ctx context.Context, id, person string) (*Call, []Round, *Draft, int, error) {
	return s.callPage(ctx, id, person)
}

func (s *Store) callPage(ctx context.Context, id, person string) (*Call, []Round, *Draft, int, error) {
	b := &pgx.Batch{}
	var waiting int
	var call *Call
	var rounds []Round
	var draft *Draft
	b.Queue(`select `+callColumns+` from calls c join servers s on s.id = c.server_id where c.id = $1`, id).
		Query(func(rows pgx.Rows) error {
			var err error
			call, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
			return err
		})
	b.Queue(`select `+roundColumnsNow+` from rounds where call_id = $1 order by seq`, id).
		Query(func(rows pgx.Rows) error {
			var err error
			rounds, err = pgx.CollectRows(rows, pgx.RowToStructByName[Round])
			return err
		})
	b.Queue(`select d.form, d.updated_at from drafts d
		join calls c on c.id = d.call_id and c.current_seq = d.seq
		join rounds r on r.call_id = d.call_id and r.seq = d.seq and r.status = 'pending'
		where d.call_id = $1`, id).
		Query(func(rows pgx.Rows) error {
			var err error
			draft, err = pgx.CollectOneRow(rows, scanDraft)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		})
	if person != "" {
		b.Queue(waitingCount, person).QueryRow(func(row pgx.Row) error { return row.Scan(&waiting) })
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, nil, 0, translate(err, "call")
	}
	return call, rounds, draft, waiting, nil
}

// Rounds returns a call's rounds in order.
func (s *Store) Rounds(ctx context.Context, callID string) ([]Round, error) {
	rows, _ := s.pool.Query(ctx, `select `+roundColumnsNow+` from rounds where call_id = $1 order by seq`, callID)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Round])
}

// RoundsFrom returns a call's rounds from seq on.
func (s *Store) RoundsFrom(ctx context.Context, callID string, seq int) ([]Round, error) {
	rows, _ := s.pool.Query(ctx, `select `+roundColumnsNow+` from rounds where call_id = $1 and seq >= $2 order by seq`, callID, seq)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Round])
}

// Calls returns an owner's most recent calls.
func (s *Store) Calls(ctx context.Context, owner string, limit int) ([]Call, error) {
	rows, _ := s.pool.Query(ctx, `select `+callColumns+`
		from calls c join servers s on s.id = c.server_id
		where c.owner = $1 order by c.created_at desc limit $2`, owner, limit)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Call])
}

// LastOutcomes says how the last round of each of the calls ended, for
// those whose last round ended: answered, declined, cancelled or expired.
func (s *Store) LastOutcomes(ctx context.Context, callIDs []string) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, `
		select c.id::text, r.outcome from calls c
		join rounds r on r.call_id = c.id and r.seq = c.current_seq
		where c.id = any($1::uuid[]) and r.outcome is not null`, callIDs)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var id, outcome string
	_, err = pgx.ForEachRow(rows, []any{&id, &outcome}, func() error {
		out[id] = outcome
		return nil
	})
	return out, err
}

// InboxItem is a pending round waiting on a person: theirs, assigned to
// them, or assigned to one of their teams.
type InboxItem struct {
	CallID        string          `db:"call_id"`
	Seq           int             `db:"seq"`
	ServerName    string          `db:"server_name"`
	Method        string          `db:"method"`
	Target        string          `db:"target"`
	Title         string          `db:"title"`
	Owner         string          `db:"owner"`
	Assignee      *string         `db:"assignee"`
	InputRequests json.RawMessage `db:"input_requests"`
	CreatedAt     time.Time       `db:"created_at"`
	ExpiresAt     time.Time       `db:"expires_at"`
}

// inboxSQL lists the pending, unexpired rounds waiting on person $1,
// oldest deadline first, up to $2: those assigned to them or to a team of
// theirs (a call with no assignee waits on its owner).
const inboxSQL = `
		select r.call_id::text as call_id, r.seq, s.name as server_name, c.method, c.target, c.title, c.owner, c.assignee,
		       r.input_requests, r.created_at, r.expires_at
		from calls c
		join rounds r on r.call_id = c.id and r.seq = c.current_seq
		join servers s on s.id = c.server_id
		where c.status = 'input_required' and r.status = 'pending' and r.expires_at > now()
		  and ((c.assignee is null and c.owner = $1)
		       or c.assignee = any(array(select $1::text union all
		                                 select 'team:' || t.name from teams t
		                                 join team_members m on m.team_id = t.id join users u on u.id = m.user_id
		                                 where u.name = $1)))
		order by r.expires_at limit $2`

// SettledItem is a round that left a person's inbox lately, with how it
// ended: answered, declined, cancelled or expired.
type SettledItem struct {
	CallID     string    `db:"call_id"`
	Seq        int       `db:"seq"`
	ServerName string    `db:"server_name"`
	Target     string    `db:"target"`
	Title      string    `db:"title"`
	Outcome    string    `db:"outcome"`
	AnsweredBy *string   `db:"answered_by"`
	EndedAt    time.Time `db:"ended_at"`
}

// settledCalls is how many of a person's most recently changed calls
// settledSQL looks through.
const settledCalls = 30

// settledSQL lists the rounds that would have been in person $1's inbox
// and ended since $2, latest first, up to $3. A round's end changes its
// call, so its call is among the person's calls changed since: read from
// the $4 (settledCalls) most recently changed (each name the person
// answers for, by index), not from every round that ended lately.
const settledSQL = `
		with names as (
			select $1::text as name
			union all
			select 'team:' || t.name from teams t
			join team_members m on m.team_id = t.id join users u on u.id = m.user_id
			where u.name = $1
		), recent as (
			(select c.* from names n cross join lateral (
				select * from calls c where c.assignee = n.name and c.updated_at >= $2
				order by c.updated_at desc limit $4) c
			 union all
			 (select * from calls c where c.assignee is null and c.owner = $1 and c.updated_at >= $2
			  order by c.updated_at desc limit $4))
			order by updated_at desc limit $4
		)
		select r.call_id::text as call_id, r.seq, s.name as server_name, c.target, c.title, r.outcome, r.answered_by, r.ended_at
		from recent c
		join rounds r on r.call_id = c.id
		join servers s on s.id = c.server_id
		where r.outcome is not null and r.ended_at >= $2
		order by r.ended_at desc, r.call_id, r.seq desc limit $3`

// InboxPage reads what the inbox page shows, in one round trip: the
// rounds waiting on the person (up to limit), the rounds that left their
// inbox since (up to settledLimit), and the navigation's count
// (WaitingCount).
func (s *Store) InboxPage(ctx context.Context, person string, limit int, since time.Time, settledLimit int) (
	items []InboxItem, settled []SettledItem, waiting int, err error) {
	b := &pgx.Batch{}
	b.Queue(inboxSQL, person, limit).Query(func(rows pgx.Rows) error {
		items, err = pgx.CollectRows(rows, pgx.RowToStructByName[InboxItem])
		return err
	})
	b.Queue(settledSQL, person, since, settledLimit, settledCalls).Query(func(rows pgx.Rows) error {
		settled, err = pgx.CollectRows(rows, pgx.RowToStructByName[SettledItem])
		return err
	})
	b.Queue(waitingCount, person).QueryRow(func(row pgx.Row) error { return row.Scan(&waiting) })
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, 0, err
	}
	return items, settled, waiting, nil
}

// WaitingCount counts an owner's rounds waiting for an answer, as the inbox
// lists them.
func (s *Store) WaitingCount(ctx context.Context, owner string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, waitingCount, owner).Scan(&n)
	return n, err
}

const waitingCount = `
	select count(*) from calls c
	join rounds r on r.call_id = c.id and r.seq = c.current_seq
	where c.owner = $1 and c.status = 'input_required' and r.status = 'pending' and r.expires_at > now()`

// CallChange is what a write did to a call: its status and time of change.
type CallChange struct {
	Status    string
	UpdatedAt time.Time
}

func (s *Store) answerTx(ctx context.Context, tx pgx.Tx, callID string, seq int, responses json.RawMessage, by string, audit []AuditEntry, expired *bool) (CallChange, error) {
	var change CallChange
	var pending, moved, held bool
	// The round, the call, the audit, the draft and the call's note in one
	// round trip. A held round's answer goes back on the open session, so
	// its call is running: the note wakes the instance holding it. Any
	// other round's answer is sent by a new job, below. A round no longer
	// pending changes nothing; a call no longer waiting for it rolls back.
	b := &pgx.Batch{}
	b.Queue(`
		with r as (
			update rounds set status = 'answered', responses = $3, answered_by = $4, answered_at = now()
			where call_id = $1 and seq = $2 and status = 'pending' and expires_at > now()
			returning held_by is not null as held
		), c as (
			update calls set status = case when r.held then 'running' else 'queued' end, updated_at = now()
			from r
			where calls.id = $1 and calls.current_seq = $2 and calls.status = 'input_required'
			returning calls.status, calls.updated_at
		)
		select r.held, c.status, c.updated_at from r left join c on true`,
		callID, seq, responses, by).QueryRow(func(row pgx.Row) error {
		var status *string
		var updated *time.Time
		err := row.Scan(&held, &status, &updated)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		pending, moved = true, status == nil
		if status != nil {
			change = CallChange{Status: *status, UpdatedAt: *updated}
		}
		return err
	})
	for _, e := range audit {
		if err := queueAudit(b, e); err != nil {
			return change, err
		}
	}
	// A draft of an answered round is never shown again.
	b.Queue(`delete from drafts where call_id = $1 and seq = $2`, callID, seq)
	queueNotes(ctx, b)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return change, err
	}
	switch {
	case !pending:
		return change, s.whyNotPendingTx(ctx, tx, callID, seq, expired)
	case moved:
		return change, conflict("This round is no longer waiting for answers.")
	case held:
		return change, nil
	}
	return change, s.enqueueTx(ctx, tx, callID, seq)
}

// Decision is what the caller of AnswerChecked decided to store.
type Decision struct {
	Responses json.RawMessage
	By        string
	Audit     []AuditEntry
	// Refusal, when set, ends the call cancelled with this message
	// instead of sending the answers: the person declined a sampling
	// request, which the spec answers by not sending the request again.
	Refusal string
}

// Answering is what AnswerChecked reads for its decide: the call, its
// round, and whether the person answering is whom the call's rounds are
// assigned to (as IsAssignee says), read in the same transaction.
type Answering struct {
	Call     *Call
	Round    *Round
	Assigned bool
}

// AnswerChecked reads a call and its round seq, with whether person is
// assigned its rounds, lets decide check them and the answers, and stores
// what it decides, all in one transaction: an answer costs one, and decide
// needs no other connection. An error from decide rolls back and is
// returned as it is. It returns the call as the answer left it.
func (s *Store) AnswerChecked(ctx context.Context, callID string, seq int, person string, decide func(Answering) (Decision, error)) (*Call, error) {
	var expired bool
	var call *Call
	var instance string
	err := s.announcedTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// The call, the round and the person's membership of the team the
		// call is assigned to (if it is) in one round trip.
		var round *Round
		var member bool
		b := &pgx.Batch{}
		b.Queue(`select `+callColumns+` from calls c join servers s on s.id = c.server_id where c.id = $1`, callID).
			Query(func(rows pgx.Rows) error {
				var err error
				call, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
				return translate(err, "call")
			})
		b.Queue(`select `+roundColumnsNow+` from rounds where call_id = $1 and seq = $2`, callID, seq).
			Query(func(rows pgx.Rows) error {
				var err error
				round, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Round])
				return translate(err, "round")
			})
		b.Queue(`select exists (select 1 from calls c
			join teams t on t.name = substr(c.assignee, length($3::text) + 1)
			join team_members m on m.team_id = t.id join users u on u.id = m.user_id
			where c.id = $1 and starts_with(c.assignee, $3::text) and u.name = $2 and not u.disabled)`,
			callID, person, TeamPrefix).QueryRow(func(row pgx.Row) error { return row.Scan(&member) })
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		d, err := decide(Answering{Call: call, Round: round,
			Assigned: call.Assignee != nil && assigned(*call.Assignee, person, member)})
		instance = auditInstance(d.Audit)
		if err != nil {
			return err
		}
		if d.Refusal != "" {
			if err := s.refuseTx(ctx, tx, callID, seq, d.Responses, d.By, d.Refusal, d.Audit, &expired); err != nil {
				return err
			}
			call.Status, call.Error, call.UpdatedAt = CallCancelled, &d.Refusal, time.Now()
			return nil
		}
		change, err := s.answerTx(ctx, tx, callID, seq, d.Responses, d.By, d.Audit, &expired)
		if err != nil {
			return err
		}
		call.Status, call.UpdatedAt = change.Status, change.UpdatedAt
		return nil
	})
	if expired {
		if err := s.ExpireRound(ctx, instance, callID, seq); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	return call, nil
}

// whyNotPendingTx explains why a round could not be answered.
func (s *Store) whyNotPendingTx(ctx context.Context, tx pgx.Tx, callID string, seq int, expired *bool) error {
	var status string
	var past bool
	var by *string
	err := tx.QueryRow(ctx, `select status, expires_at <= now(), answered_by from rounds where call_id = $1 and seq = $2`,
		callID, seq).Scan(&status, &past, &by)
	if err != nil {
		return translate(err, "round")
	}
	switch {
	case status == RoundPending && past:
		*expired = true
		return conflict("%s", RoundExpiredMessage)
	case status == RoundAnswered && by != nil:
		return conflict("%s", AlreadyAnsweredMessage(*by))
	case status == RoundAnswered:
		return conflict("%s", AlreadyAnsweredMessage(""))
	case status == RoundExpired:
		return conflict("%s", RoundExpiredMessage)
	default:
		return conflict("This round was %s.", status)
	}
}

// ExpireRound ends a pending round past its deadline, and its call, as the
// expiry job would, writing the same audit row in the same transaction:
// found on an answer or a read, not by the job. instance is the instance
// that found it.
func (s *Store) ExpireRound(ctx context.Context, instance, callID string, seq int) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// A held question is its holder's to cancel towards the server.
		tag, err := tx.Exec(ctx, `update rounds set status = 'expired'
			where call_id = $1 and seq = $2 and status = 'pending' and held_by is null`, callID, seq)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `insert into audit_log (instance, actor, action, target, detail)
			select $1, 'system', 'round.expired', c.id::text, jsonb_build_object('seq', $3::int, 'server', s.name)
			from calls c join servers s on s.id = c.server_id where c.id = $2`, instance, callID, seq); err != nil {
			return err
		}
		tag, err = tx.Exec(ctx, `update calls set status = 'expired', error = $3,
			updated_at = now(), finished_at = now()
			where id = $1 and current_seq = $2 and status = 'input_required'`, callID, seq, RoundExpiredMessage)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return s.callFinishedTx(ctx, tx, callID)
	})
}

// Attempt is what a request job needs: the call, and the answered round
// whose answers the retry carries (nil for the first request).
type Attempt struct {
	Call  *Call
	Round *Round
	// RoundTTL is the server's own lifetime for its rounds; zero means
	// the default.
	RoundTTL time.Duration
	// HeaderSchema is the tool's cached inputSchema when it marks
	// arguments x-mcp-header, else nil: most calls decode no schema.
	HeaderSchema json.RawMessage
	// Token is the connection the call's owner uses at the server (as
	// OAuthTokenFor), nil when there is none.
	Token *OAuthToken
	// Before is the round at the next round's place in the asking before
	// this one (see NextPlace), nil when there is none: the round the
	// server's next round may repeat.
	Before *Round
}

// NextPlace is where the round a request comes back with goes: its asking
// and position. A request sent afresh (its round's state refused) begins
// the next asking.
func (a *Attempt) NextPlace() (asking, position int) {
	switch r := a.Round; {
	case r == nil:
		return 0, 1
	case r.StateExpiredAt != nil:
		return r.Asking + 1, 1
	default:
		return r.Asking, r.Position + 1
	}
}

// Afresh reports whether the request goes without answers and state: the
// server refused the state of the round it answers.
func (a *Attempt) Afresh() bool { return a.Round != nil && a.Round.StateExpiredAt != nil }

// StartAttempt loads what the request of round seq needs, in one round
// trip and one transaction. It returns ErrConflict when the call has moved
// on (the request was already made, or the call ended), so a duplicate job
// does nothing. It writes nothing: the call stays queued until the
// request's outcome is stored, which saves a commit per round.
func (s *Store) StartAttempt(ctx context.Context, callID string, seq int) (*Attempt, error) {
	a := &Attempt{}
	var ttlMs *int64
	b := &pgx.Batch{}
	b.Queue(`select `+callColumns+`, (extract(epoch from s.round_ttl) * 1000)::bigint as ttl_ms
		from calls c join servers s on s.id = c.server_id where c.id = $1`, callID).
		Query(func(rows pgx.Rows) error {
			var err error
			a.Call, err = pgx.CollectOneRow(rows, func(row pgx.CollectableRow) (*Call, error) {
				ct, err := pgx.RowToStructByName[callWithTTL](row)
				if err != nil {
					return nil, err
				}
				ttlMs = ct.TTLMs
				return &ct.Call, nil
			})
			return err
		})
	if seq > 0 {
		b.Queue(`select `+roundColumns+` from rounds where call_id = $1 and seq = $2`, callID, seq).
			Query(func(rows pgx.Rows) error {
				var err error
				a.Round, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Round])
				return err
			})
		// The round at the next round's place in the asking before (see
		// NextPlace). Only a call the server was asked afresh for has one.
		b.Queue(`select `+roundColumns+` from rounds where call_id = $1 and seq = (
			select p.seq from rounds r join rounds p on p.call_id = r.call_id
			where r.call_id = $1 and r.seq = $2 and (r.asking > 0 or r.state_expired_at is not null)
			  and p.asking = case when r.state_expired_at is not null then r.asking else r.asking - 1 end
			  and coalesce(p.position, p.seq) = case when r.state_expired_at is not null then 1 else coalesce(r.position, r.seq) + 1 end)`,
			callID, seq).
			Query(func(rows pgx.Rows) error {
				before, err := pgx.CollectRows(rows, pgx.RowToAddrOfStructByName[Round])
				if len(before) > 0 {
					a.Before = before[0]
				}
				return err
			})
	}
	// What the request carries besides, read in the same round trip: the
	// tool's header schema and the owner's connection at the server. Both
	// are keyed through the call, so they need no answer from the first.
	b.Queue(`select t->'inputSchema' from calls c join servers s on s.id = c.server_id
		cross join lateral jsonb_array_elements(case when jsonb_typeof(s.tools) = 'array' then s.tools else '[]' end) t
		where c.id = $1 and c.method = 'tools/call' and t->>'name' = c.target
		  and strpos((t->'inputSchema')::text, 'x-mcp-header') > 0
		limit 1`, callID).
		Query(func(rows pgx.Rows) error {
			schemas, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
			if len(schemas) > 0 {
				a.HeaderSchema = schemas[0]
			}
			return err
		})
	b.Queue(`select `+oauthTokenColumns+` from calls c join servers s on s.id = c.server_id
		join oauth_tokens t on t.server_id = c.server_id
		 and t.owner = case s.oauth_mode when 'shared' then '' else c.owner end
		where c.id = $1`, callID).
		Query(func(rows pgx.Rows) error {
			defer rows.Close()
			if rows.Next() {
				var err error
				a.Token, err = s.scanToken(rows)
				return err
			}
			return rows.Err()
		})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, translate(err, "call")
	}
	if ttlMs != nil {
		a.RoundTTL = time.Duration(*ttlMs) * time.Millisecond
	}
	c := a.Call
	if c.CurrentSeq != seq || (c.Status != CallQueued && c.Status != CallRunning) {
		return nil, conflict("call %s is not waiting for request %d", callID, seq)
	}
	return a, nil
}

type callWithTTL struct {
	Call
	TTLMs *int64 `db:"ttl_ms"`
}

// Outcome is what the job that made a request writes with its outcome, in
// the outcome's own transaction: the attempt's record, and the job's
// completion, so a crash after the commit neither loses the record nor
// sends the request again.
type Outcome struct {
	Attempt *AttemptRecord
	// Job is the River job that made the request, and JobAttempt its
	// attempt; 0 outside a worker.
	Job        int64
	JobAttempt int
}

// completeJob marks a request's job completed, as River's JobCompleteTx
// does for a job with no metadata to merge. River's own statement, made
// for many jobs and every kind of change, is planned afresh each time it
// runs: under the API's load 0.64 ms of Postgres's time went to planning
// each completion against 0.2 ms to run it, nearly a fifth of all
// Postgres's time (pg_stat_statements). This one is planned once on each
// connection and rides in the outcome's batch. When the job's Work
// returns, River finds it completed and leaves it so. A job rescued and
// running again has a later attempt, which this leaves alone.
const completeJob = `update river_job set state = 'completed', finalized_at = now()
	where id = $1 and attempt = $2 and state = 'running'`

// queue adds the attempt's record and the job's completion to a batch of
// the outcome's statements.
func (o *Outcome) queue(b *pgx.Batch) {
	if o == nil {
		return
	}
	if o.Attempt != nil {
		b.Queue(insertAttempt, o.Attempt.args()...)
	}
	if o.Job != 0 {
		b.Queue(completeJob, o.Job, o.JobAttempt)
	}
}

func firstOutcome(with []Outcome) *Outcome {
	if len(with) == 0 {
		return nil
	}
	return &with[0]
}

// CompleteCall records the server's final result.
func (s *Store) CompleteCall(ctx context.Context, callID string, seq int, result json.RawMessage, with ...Outcome) error {
	return s.finish(ctx, callID, seq, firstOutcome(with), `status = 'complete', result = $3, error = null, retryable = false`, result)
}

// FailCall records why the request of round seq failed. A retryable call
// can be queued again with RetryCall, carrying the stored answers.
func (s *Store) FailCall(ctx context.Context, callID string, seq int, message string, retryable bool, with ...Outcome) error {
	// The message may quote a server: keep it storable text.
	return s.finish(ctx, callID, seq, firstOutcome(with), `status = 'failed', error = $3, retryable = $4`, clean(message, 16<<10), retryable)
}

func (s *Store) finish(ctx context.Context, callID string, seq int, o *Outcome, set string, args ...any) error {
	return s.announcedTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var webhook bool
		b := &pgx.Batch{}
		b.Queue(`update calls set `+set+`, updated_at = now(), finished_at = now()
			where id = $1 and current_seq = $2 and status in ('queued', 'running')
			returning webhook_url is not null`, append([]any{callID, seq}, args...)...).
			QueryRow(func(row pgx.Row) error {
				err := row.Scan(&webhook)
				if errors.Is(err, pgx.ErrNoRows) {
					return conflict("call %s moved on before request %d finished", callID, seq)
				}
				return err
			})
		o.queue(b)
		queueNotes(ctx, b)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if !webhook {
			return nil
		}
		return s.callFinishedTx(ctx, tx, callID)
	})
}

// NewRound is an input_required answer to store.
type NewRound struct {
	InputRequests json.RawMessage
	RequestState  []byte
	ExpiresAt     time.Time
	// Responses, when set, answer the round at once, with no person asked
	// (a round of roots/list questions only): it is stored answered by
	// AnsweredAutomatically and its retry is enqueued, and the audit log
	// says so, naming Instance.
	Responses json.RawMessage
	Instance  string
	// Again, with Responses, says they are the answers given to the same
	// questions before the server was asked afresh: the round is answered
	// by AnsweredAgain, and the audit log says which round they came from.
	Again *Round
	// Asking and Position place the round (see Attempt.NextPlace).
	Asking, Position int
}

// AnsweredAutomatically is who answered a round the engine answered itself.
const AnsweredAutomatically = "rounds (automatically)"

// AnsweredAgain is who answered a round with the answers given to the same
// questions before the server was asked afresh.
const AnsweredAgain = "rounds (your earlier answers)"

// AddRound stores the round the request of round seq came back with, and
// makes it the call's current one. The call's note, read before the
// commit, carries the round.
func (s *Store) AddRound(ctx context.Context, callID string, seq int, r NewRound, with ...Outcome) error {
	status, roundStatus, by := CallInputRequired, RoundPending, (*string)(nil)
	if r.Responses != nil {
		status, roundStatus = CallQueued, RoundAnswered
		by = new(AnsweredAutomatically)
		if r.Again != nil {
			by = new(AnsweredAgain)
		}
	}
	var position *int // null in the first asking, where it is the seq
	if r.Asking > 0 {
		position = &r.Position
	}
	return s.announcedTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// The call, the round and the attempt's record in one round trip.
		// A call that moved on meanwhile updates nothing, and the error
		// rolls back the rest.
		var webhook bool
		o := firstOutcome(with)
		b := &pgx.Batch{}
		b.Queue(`
			update calls set status = $3, current_seq = $2 + 1, error = null, retryable = false,
			       updated_at = now()
			where id = $1 and current_seq = $2 and status in ('queued', 'running')
			returning webhook_url is not null`, callID, seq, status).
			QueryRow(func(row pgx.Row) error {
				err := row.Scan(&webhook)
				if errors.Is(err, pgx.ErrNoRows) {
					return conflict("call %s moved on before request %d finished", callID, seq)
				}
				return err
			})
		b.Queue(`
			insert into rounds (call_id, seq, input_requests, request_state, expires_at,
			                    status, responses, answered_by, answered_at, outcome, ended_at, asking, position)
			values ($1, $2 + 1, $3, $4, $5, $6, $7, $8,
			        case when $6 = 'answered' then now() end,
			        case when $6 = 'answered' then round_outcome($7) end,
			        case when $6 = 'answered' then now() end, $9, $10)`,
			callID, seq, r.InputRequests, r.RequestState, r.ExpiresAt, roundStatus, r.Responses, by, r.Asking, position)
		o.queue(b)
		queueNotes(ctx, b)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return translate(err, "round")
		}
		if r.Responses == nil {
			return s.roundWaitingTx(ctx, tx, callID, seq+1, r.ExpiresAt, webhook)
		}
		entry := AuditEntry{Instance: r.Instance, Actor: "system", Action: "round.answered_automatically",
			Target: callID, Detail: map[string]any{"seq": seq + 1}}
		if r.Again != nil {
			entry.Action = "round.answered_again"
			entry.Detail["from_seq"] = r.Again.Seq
			if r.Again.AnsweredBy != nil {
				entry.Detail["answered_by"] = *r.Again.AnsweredBy
			}
		}
		if err := auditTx(ctx, tx, entry); err != nil {
			return err
		}
		return s.enqueueTx(ctx, tx, callID, seq+1)
	})
}

// refuseTx ends a pending round and its call without a retry (see
// Decision.Refusal): responses records the choices made, message says on
// the call why it ended. Like an answer, it happens once.
func (s *Store) refuseTx(ctx context.Context, tx pgx.Tx, callID string, seq int, responses json.RawMessage, by, message string, audit []AuditEntry, expired *bool) error {
	tag, err := tx.Exec(ctx, `
		update rounds set status = 'answered', responses = $3, answered_by = $4, answered_at = now()
		where call_id = $1 and seq = $2 and status = 'pending' and expires_at > now() and held_by is null`,
		callID, seq, responses, by)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return s.whyNotPendingTx(ctx, tx, callID, seq, expired)
	}
	tag, err = tx.Exec(ctx, `
		update calls set status = 'cancelled', error = $3, retryable = false, updated_at = now(), finished_at = now()
		where id = $1 and current_seq = $2 and status = 'input_required'`, callID, seq, message)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return conflict("%s", NotWaitingMessage)
	}
	for _, e := range audit {
		if err := auditTx(ctx, tx, e); err != nil {
			return err
		}
	}
	return s.callFinishedTx(ctx, tx, callID)
}

// RetryCall queues a failed, retryable call's last request again, with the
// answers already stored.
func (s *Store) RetryCall(ctx context.Context, callID string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var seq int
		err := tx.QueryRow(ctx, `
			update calls set status = 'queued', error = null, retryable = false, finished_at = null, updated_at = now()
			where id = $1 and status = 'failed' and retryable returning current_seq`, callID).Scan(&seq)
		if err == pgx.ErrNoRows {
			return conflict("Only a failed call can be retried.")
		}
		if err != nil {
			return err
		}
		return s.enqueueTx(ctx, tx, callID, seq)
	})
}

// auditInstance is the instance named by an action's audit entries, for
// the records written beside it.
func auditInstance(audit []AuditEntry) string {
	if len(audit) > 0 {
		return audit[0].Instance
	}
	return ""
}
