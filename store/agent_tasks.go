package store

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
)

// AgentTask is what an agent's task (the tasks extension) is made of: the
// call as a person is shown it, its current round, the keys of that round
// the agent answered already (AgentAnswerPart), and the JSON-RPC error the
// server failed the call with (nil when it did not).
type AgentTask struct {
	Call        *Call
	Round       *Round
	Answered    []string
	ServerError json.RawMessage
}

// AgentTask reads a call as its agent's task, in one round trip.
func (s *Store) AgentTask(ctx context.Context, callID string) (*AgentTask, error) {
	t := &AgentTask{}
	b := &pgx.Batch{}
	b.Queue(`select `+callColumnsShown+` from calls c join servers s on s.id = c.server_id where c.id = $1`, callID).
		Query(func(rows pgx.Rows) error {
			var err error
			t.Call, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
			return err
		})
	b.Queue(`select `+roundColumnsNow+` from rounds where call_id = $1 and seq = (select current_seq from calls where id = $1)`, callID).
		Query(func(rows pgx.Rows) error {
			rounds, err := pgx.CollectRows(rows, pgx.RowToStructByName[Round])
			if len(rounds) > 0 {
				t.Round = &rounds[0]
			}
			return err
		})
	b.Queue(`select key from agent_answers where call_id = $1 and seq = (select current_seq from calls where id = $1)`, callID).
		Query(func(rows pgx.Rows) error {
			var err error
			t.Answered, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
	b.Queue(`select server_error from calls where id = $1 and status = 'failed'`, callID).
		Query(func(rows pgx.Rows) error {
			errs, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
			if len(errs) > 0 {
				t.ServerError = errs[0]
			}
			return err
		})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, translate(err, "call")
	}
	return t, nil
}

// ForgetAgentAnswers drops the answers an agent gave round seq one at a
// time (AgentAnswerPart), so that it is asked them all again: they did not
// fit together.
func (s *Store) ForgetAgentAnswers(ctx context.Context, callID string, seq int) error {
	_, err := s.pool.Exec(ctx, `delete from agent_answers where call_id = $1 and seq = $2`, callID, seq)
	return err
}
