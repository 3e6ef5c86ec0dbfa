package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// MarkHandshake records that a call is about to go out over a held
// session. Should the instance die, the call must not be sent again: a
// handshake-era call's side effects would repeat.
func (s *Store) MarkHandshake(ctx context.Context, callID string) error {
	_, err := s.pool.Exec(ctx, `update calls set handshake = true, status = 'running', updated_at = now()
		where id = $1 and status in ('queued', 'running')`, callID)
	return err
}

// HeldRound is a question a handshake-era server asked mid-call.
type HeldRound struct {
	InputRequests []byte
	ElicitationID string
	HeldBy        string
	ExpiresAt     time.Time
	// Afresh says it is the first question of a session started again
	// after an earlier session of the call ended: it begins a new asking,
	// so each of its questions is filled in with the answer given at the
	// same place of the asking before.
	Afresh bool
	// Asks, for an agent's call, is whom it asks besides the call's
	// assignee (see RoundAsks).
	Asks *string
}

// AddHeldRound stores a question asked on a held session as the call's next
// round, and returns its number.
func (s *Store) AddHeldRound(ctx context.Context, callID string, prevSeq int, r HeldRound) (int, error) {
	var seq int
	err := s.inTx(ctx, func(tx *txn) error {
		var webhook bool
		err := tx.QueryRow(ctx, `
			update calls set status = 'input_required', current_seq = current_seq + 1, updated_at = now()
			where id = $1 and current_seq = $2 and status in ('queued', 'running')
			returning current_seq, webhook_url is not null`,
			callID, prevSeq).Scan(&seq, &webhook)
		if err == pgx.ErrNoRows {
			return conflict("call %s moved on while its server asked", callID)
		}
		if err != nil {
			return err
		}
		var elicitation *string
		if r.ElicitationID != "" {
			elicitation = &r.ElicitationID
		}
		// Placed after the round before it: the next in its asking, or the
		// first of a new one.
		_, err = tx.Exec(ctx, `
			insert into rounds (call_id, seq, input_requests, expires_at, held_by, elicitation_id, asking, position, asks)
			select $1, $2, $3, $4, $5, $6,
			       coalesce(p.asking, 0) + case when $7 then 1 else 0 end,
			       case when $7 then 1 when coalesce(p.asking, 0) = 0 then null else coalesce(p.position, p.seq) + 1 end, $8
			from (select) one left join rounds p on p.call_id = $1 and p.seq = $2 - 1`,
			callID, seq, r.InputRequests, r.ExpiresAt, r.HeldBy, elicitation, r.Afresh && prevSeq > 0, r.Asks)
		if err != nil {
			return translate(err, "round")
		}
		// A question held on a session is left to its holder: no plan.
		return s.roundWaitingTx(ctx, tx, callID, seq, r.ExpiresAt, webhook, nil)
	})
	return seq, err
}

// Round returns one round of a call.
func (s *Store) Round(ctx context.Context, callID string, seq int) (*Round, error) {
	rows, _ := s.pool.Query(ctx, `select `+roundColumns+` from rounds where call_id = $1 and seq = $2`, callID, seq)
	r, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Round])
	return r, translate(err, "round")
}

// ExpireHeldRound ends a held question nobody answered in time. The call
// goes on: the server is told the question was cancelled. It reports
// whether it expired the round (it may have been answered meanwhile).
func (s *Store) ExpireHeldRound(ctx context.Context, callID string, seq int) (bool, error) {
	var expired bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `update rounds set status = 'expired'
			where call_id = $1 and seq = $2 and status = 'pending'`, callID, seq)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		expired = true
		_, err = tx.Exec(ctx, `update calls set status = 'running', updated_at = now()
			where id = $1 and current_seq = $2 and status = 'input_required'`, callID, seq)
		return err
	})
	return expired, err
}

// CompleteURLElicitation records that the server finished the outbound
// step of a URL-mode question.
func (s *Store) CompleteURLElicitation(ctx context.Context, callID, elicitationID string) error {
	_, err := s.pool.Exec(ctx, `
		with r as (
			update rounds set url_completed_at = now()
			where call_id = $1 and elicitation_id = $2 and url_completed_at is null returning call_id
		)
		update calls set updated_at = now() where id in (select call_id from r)`, callID, elicitationID)
	return err
}

// KeepJobAlive tells River's rescuer that a job holding a session is still
// being worked: a held call outlives the time after which River takes a
// running job for orphaned.
func (s *Store) KeepJobAlive(ctx context.Context, jobID int64) error {
	_, err := queue.KeepAlive(jobID).Exec(ctx, s.pool)
	return err
}

// AbandonHeldCall ends a handshake-era call whose session died with its
// instance (or its local process): the call fails with message, and a
// question still waiting is cancelled. Retryable, its retry starts a new
// session, the answers given before filled in.
func (s *Store) AbandonHeldCall(ctx context.Context, callID, message string, retryable bool) error {
	return s.inTx(ctx, func(tx *txn) error {
		tag, err := tx.Exec(ctx, `update calls set status = 'failed', error = $2, retryable = $3,
			updated_at = now(), finished_at = now()
			where id = $1 and handshake and status in ('queued', 'running', 'input_required')`, callID, message, retryable)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if _, err = tx.Exec(ctx, `update rounds set status = 'cancelled' where call_id = $1 and status = 'pending'`, callID); err != nil {
			return err
		}
		return s.callFinishedTx(ctx, tx, callID)
	})
}
