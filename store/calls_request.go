package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

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
	b := &pgx.Batch{}
	a := s.queueAttempt(b, callID, seq, nil, attemptSkip{})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, translate(err, "call")
	}
	if err := a.check(callID, seq); err != nil {
		return nil, err
	}
	return a, nil
}

// queueAttempt adds to b the reads of what the request of round seq needs;
// the Attempt returned is filled as b's results are read. A transaction
// that enqueues a request sent at once reads it this way too (see Direct),
// skipping what it read itself.
func (s *Store) queueAttempt(b *pgx.Batch, callID string, seq int, a *Attempt, skip attemptSkip) *Attempt {
	if a == nil {
		a = &Attempt{}
	}
	// A call waiting for a request is never past a round's deadline (see
	// check): the columns skip that test, which costs its planning.
	if !skip.call {
		b.Queue(`select `+callColumnsSending+`, `+callTTLColumn+`
			from calls c join servers s on s.id = c.server_id where c.id = $1`, callID).
			Query(func(rows pgx.Rows) error {
				var err error
				a.Call, err = pgx.CollectOneRow(rows, func(row pgx.CollectableRow) (*Call, error) {
					ct, err := pgx.RowToStructByName[callWithTTL](row)
					if err != nil {
						return nil, err
					}
					a.RoundTTL = ct.roundTTL()
					return &ct.Call, nil
				})
				return err
			})
	}
	if seq > 0 && !skip.round {
		b.Queue(`select `+roundColumns+` from rounds where call_id = $1 and seq = $2`, callID, seq).
			Query(func(rows pgx.Rows) error {
				var err error
				a.Round, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Round])
				return err
			})
	}
	if seq > 0 && !skip.before {
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
	// are keyed through the call, so they need no answer from the first;
	// functions (migration 00066) keep their plans.
	b.Queue(`select call_header_schema($1)`, callID).
		QueryRow(func(row pgx.Row) error { return row.Scan(&a.HeaderSchema) })
	b.Queue(`select `+oauthTokenColumns+` from call_oauth_token($1) t`, callID).
		Query(func(rows pgx.Rows) error {
			defer rows.Close()
			if rows.Next() {
				var err error
				a.Token, err = s.scanToken(rows)
				return err
			}
			return rows.Err()
		})
	return a
}

// check says whether the call still waits for request seq.
func (a *Attempt) check(callID string, seq int) error {
	if c := a.Call; c == nil || c.CurrentSeq != seq || (c.Status != CallQueued && c.Status != CallRunning) {
		return conflict("call %s is not waiting for request %d", callID, seq)
	}
	return nil
}

// attemptSkip says which of an attempt's reads queueAttempt leaves out:
// the transaction that enqueues the request read them itself.
type attemptSkip struct {
	call  bool // Attempt.Call and RoundTTL are set
	round bool // the batch sets Attempt.Round before these reads' results
	// before: the round is in the first asking and its state was not
	// refused, so no round is at the next round's place before it.
	before bool
}

// callWithTTL is a call with its server's lifetime for rounds.
type callWithTTL struct {
	Call
	TTLMs *int64 `db:"ttl_ms"`
}

// callTTLColumn reads the server's lifetime for rounds beside a call.
const callTTLColumn = `(extract(epoch from s.round_ttl) * 1000)::bigint as ttl_ms`

func (ct *callWithTTL) roundTTL() time.Duration {
	if ct.TTLMs == nil {
		return 0
	}
	return time.Duration(*ct.TTLMs) * time.Millisecond
}

// Outcome is what the job that made a request writes with its outcome, in
// the outcome's own transaction: the attempt's record, and the job's
// completion, so a crash after the commit neither loses the record nor
// sends the request again.
type Outcome struct {
	Attempt *AttemptRecord
	// Job is the job that made the request: River's, completed with the
	// outcome, or the safety net of a request sent directly (see Direct),
	// removed while River has not taken it. The zero Job is none.
	Job queue.Job
}

// queue adds the attempt's record and the job's completion to a batch of
// the outcome's statements.
func (o *Outcome) queue(b *pgx.Batch) {
	if o == nil {
		return
	}
	if o.Attempt != nil {
		b.Queue(insertAttempt, o.Attempt.args()...)
	}
	if finish, ok := queue.Finish(o.Job); ok {
		finish.Queue(b)
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
	return s.finish(ctx, callID, seq, firstOutcome(with), `status = 'failed', error = $3, retryable = $4, server_error = null`,
		clean(message, 16<<10), retryable)
}

// FailCallAnswered is FailCall for a server that answered with a JSON-RPC
// error, kept as serverError ({"code", "message"}) for the agent that
// started the call (see CallServerError).
func (s *Store) FailCallAnswered(ctx context.Context, callID string, seq int, message string, retryable bool,
	serverError json.RawMessage, with ...Outcome) error {
	return s.finish(ctx, callID, seq, firstOutcome(with), `status = 'failed', error = $3, retryable = $4, server_error = $5`,
		clean(message, 16<<10), retryable, serverError)
}

func (s *Store) finish(ctx context.Context, callID string, seq int, o *Outcome, set string, args ...any) error {
	return s.announcedTx(ctx, func(tx *txn) error {
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
		queueNotes(tx, b)
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
	// Task says the call's task asked the round (see tasks.go); Keys are
	// its questions' keys, kept for the task's life.
	Task bool
	Keys []string
	// Process names the local server's process that asked, if any.
	Process string
	// Asks, for an agent's call, is whom the round asks besides its
	// assignee (see RoundAsks): AsksAgent keeps it out of every inbox,
	// mail and escalation; AsksOwner gives it to the owner alone.
	Asks *string
}

// AnsweredAutomatically is who answered a round the engine answered itself.
const AnsweredAutomatically = "rounds (automatically)"

// AnsweredAgain is who answered a round with the answers given to the same
// questions before the server was asked afresh.
const AnsweredAgain = "rounds (the answers given before)"

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
	return s.announcedTx(ctx, func(tx *txn) error {
		// The call, the round and the attempt's record in one round trip.
		// A call that moved on meanwhile updates nothing, and the error
		// rolls back the rest.
		var webhook bool
		o := firstOutcome(with)
		b := &pgx.Batch{}
		b.Queue(`
			update calls set status = $3, current_seq = $2 + 1, error = null, retryable = false,
			       task_keys = task_keys || $4::text[], updated_at = now()
			where id = $1 and current_seq = $2 and status in ('queued', 'running')
			returning webhook_url is not null`, callID, seq, status, r.Keys).
			QueryRow(func(row pgx.Row) error {
				err := row.Scan(&webhook)
				if errors.Is(err, pgx.ErrNoRows) {
					return conflict("call %s moved on before request %d finished", callID, seq)
				}
				return err
			})
		// A waiting round carries the plan its call's (or else its
		// server's) deadlines make; its jobs are scheduled below.
		var plan RoundPlan
		b.Queue(`
			insert into rounds (call_id, seq, input_requests, request_state, expires_at,
			                    status, responses, answered_by, answered_at, outcome, ended_at, asking, position, task, process,
			                    on_expiry, escalate_at, escalate_to, asks)
			select $1, $2 + 1, $3, $4, $5, $6, $7, $8,
			       case when $6 = 'answered' then now() end,
			       case when $6 = 'answered' then round_outcome($7) end,
			       case when $6 = 'answered' then now() end, $9, $10, $11, nullif($12, ''),
			       case when $6 = 'pending' then coalesce(d.on_expiry, s.on_expiry) else 'expire' end,
			       case when $6 = 'pending' and $13::text is null and coalesce(d.escalate_to, s.escalate_to) is not null
			            and now() + coalesce(d.escalate_after, s.escalate_after) < $5
			            then now() + coalesce(d.escalate_after, s.escalate_after) end,
			       case when $6 = 'pending' and $13::text is null and now() + coalesce(d.escalate_after, s.escalate_after) < $5
			            then coalesce(d.escalate_to, s.escalate_to) end, $13
			from calls c join servers s on s.id = c.server_id left join call_deadlines d on d.call_id = c.id
			where c.id = $1
			returning escalate_at, on_expiry`,
			callID, seq, r.InputRequests, r.RequestState, r.ExpiresAt, roundStatus, r.Responses, by, r.Asking, position, r.Task, r.Process,
			asks(r)).
			QueryRow(func(row pgx.Row) error { return row.Scan(&plan.EscalateAt, &plan.OnExpiry) })
		o.queue(b)
		queueNotes(tx, b)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return translate(err, "round")
		}
		if r.Responses == nil {
			return s.roundWaitingTx(ctx, tx, callID, seq+1, r.ExpiresAt, webhook, &plan)
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
		return s.enqueueTx(ctx, tx, nil, callID, seq+1)
	})
}

// asks is whom a round to store asks besides its assignee: nobody when it
// is answered at once.
func asks(r NewRound) *string {
	if r.Responses != nil {
		return nil
	}
	return r.Asks
}

// RetryCall queues a failed, retryable call's last request again, with the
// answers already stored.
func (s *Store) RetryCall(ctx context.Context, callID string) error {
	return s.inTx(ctx, func(tx *txn) error {
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
		return s.enqueueTx(ctx, tx, nil, callID, seq)
	})
}

// SetProgress keeps what the server said of the progress of the call's
// request seq while it runs; every instance hears it with the call's note.
// It leaves updated_at alone: progress is not a change of the call's state.
func (s *Store) SetProgress(ctx context.Context, callID string, p Progress) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `update calls set progress = $3
		where id = $1 and current_seq = $2 and status in ('queued', 'running')`, callID, p.Seq, raw)
	return err
}
