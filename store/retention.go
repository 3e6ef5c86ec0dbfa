package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// DeleteFinishedCalls deletes up to batch calls that finished before
// before, oldest first, with their rounds, drafts and attempts. Each batch
// is one short transaction that locks only the calls it deletes; calls
// locked elsewhere are left for the next batch. It returns how many it
// deleted.
func (s *Store) DeleteFinishedCalls(ctx context.Context, before time.Time, batch int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		delete from calls where id in (
			select id from calls where finished_at < $1
			order by finished_at limit $2 for update skip locked)`, before, batch)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// PruneAuditLog deletes up to batch audit entries older than keep (at
// least a day), oldest first, through the one function the audit log's
// trigger lets delete. It returns how many it deleted.
func (s *Store) PruneAuditLog(ctx context.Context, keep time.Duration, batch int) (int, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `select prune_audit_log(make_interval(secs => $1), $2)`,
		keep.Seconds(), batch).Scan(&n)
	return int(n), err
}

// DeleteCall deletes one call with its rounds, drafts and attempts, for a
// privacy request, and writes the audit entry in the same transaction. A
// call still waiting on its server is deleted too: its job finds nothing
// left to do.
func (s *Store) DeleteCall(ctx context.Context, id string, entry AuditEntry) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `delete from calls where id = $1`, id)
		if err != nil {
			return translate(err, "call")
		}
		if tag.RowsAffected() == 0 {
			return notFound("call")
		}
		entry.Target = id
		return auditTx(ctx, tx, entry)
	})
}

// DeleteCallsOf deletes every call owner started, with their rounds,
// drafts and attempts, and writes the audit entry (with the count) in the
// same transaction. It returns how many calls it deleted.
func (s *Store) DeleteCallsOf(ctx context.Context, owner string, entry AuditEntry) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `delete from calls where owner = $1`, owner)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		if entry.Detail == nil {
			entry.Detail = map[string]any{}
		}
		entry.Detail["calls"] = n
		entry.Target = owner
		return auditTx(ctx, tx, entry)
	})
	return n, err
}
