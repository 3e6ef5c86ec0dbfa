package store

import (
	"context"
	"encoding/json"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// Draft is what a person has typed into a pending round and not yet sent.
type Draft struct {
	Form      url.Values
	UpdatedAt time.Time
}

// SaveDraft keeps form as the draft of round seq, replacing any earlier
// one. Only a pending round takes a draft: for any other it returns
// ErrConflict, in the same statement that writes, so a draft never
// outlives the answer that raced it.
func (s *Store) SaveDraft(ctx context.Context, callID string, seq int, form url.Values) error {
	raw, err := json.Marshal(form)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `
		insert into drafts (call_id, seq, form)
		select call_id, seq, $3::jsonb from rounds where call_id = $1 and seq = $2 and status = 'pending'
		on conflict (call_id, seq) do update set form = excluded.form, updated_at = now()`,
		callID, seq, string(raw))
	if err != nil {
		return translate(err, "draft")
	}
	if tag.RowsAffected() == 0 {
		return conflict("This round is no longer waiting for answers, so there is no draft to save.")
	}
	return nil
}

// Draft returns the draft of round seq while the round is pending, or
// ErrNotFound.
func (s *Store) Draft(ctx context.Context, callID string, seq int) (*Draft, error) {
	rows, _ := s.pool.Query(ctx, `
		select d.form, d.updated_at from drafts d
		join rounds r on r.call_id = d.call_id and r.seq = d.seq and r.status = 'pending'
		where d.call_id = $1 and d.seq = $2`, callID, seq)
	d, err := pgx.CollectOneRow(rows, scanDraft)
	return d, translate(err, "draft")
}

func scanDraft(row pgx.CollectableRow) (*Draft, error) {
	var d Draft
	var raw []byte
	if err := row.Scan(&raw, &d.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &d.Form); err != nil {
		return nil, err
	}
	return &d, nil
}
