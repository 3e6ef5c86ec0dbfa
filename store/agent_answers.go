package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AgentAnswerPart keeps an agent's answer to one question (key) of round
// seq, and returns every answer kept for the round once all of keys have
// one; nil while some are missing. The round is locked first, so two
// parts arriving at once on different instances see each other: exactly
// one of them returns the whole set. A part for a round no longer pending
// is ErrConflict; a key not among keys is ErrInvalid. A key answered
// already keeps its first answer.
func (s *Store) AgentAnswerPart(ctx context.Context, callID string, seq int, keys []string, key string, response json.RawMessage) (map[string]json.RawMessage, error) {
	known := false
	for _, k := range keys {
		known = known || k == key
	}
	if !known {
		return nil, &Error{Kind: ErrInvalid, Message: fmt.Sprintf("This round asked no question %q.", key)}
	}
	var all map[string]json.RawMessage
	err := s.inTx(ctx, func(tx *txn) error {
		var pending bool
		err := tx.QueryRow(ctx, `select status = 'pending' from rounds where call_id = $1 and seq = $2 for update`,
			callID, seq).Scan(&pending)
		if err != nil {
			return translate(err, "round")
		}
		if !pending {
			return conflict("This round is no longer waiting for answers.")
		}
		if _, err := tx.Exec(ctx, `insert into agent_answers (call_id, seq, key, response) values ($1, $2, $3, $4)
			on conflict do nothing`, callID, seq, key, response); err != nil {
			return translate(err, "answer")
		}
		rows, _ := tx.Query(ctx, `select key, response from agent_answers where call_id = $1 and seq = $2`, callID, seq)
		got := map[string]json.RawMessage{}
		var k string
		var r json.RawMessage
		_, err = pgx.ForEachRow(rows, []any{&k, &r}, func() error {
			got[k] = append(json.RawMessage(nil), r...)
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if _, ok := got[k]; !ok {
				return nil
			}
		}
		all = got
		return nil
	})
	return all, err
}
