package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditEntry is one thing someone did, to record. Detail holds names, ids,
// actions and counts; never answer contents or request state.
type AuditEntry struct {
	Instance string
	Actor    string
	Action   string
	Target   string
	Addr     string
	Detail   map[string]any
}

// AuditRecord is a row of the audit log.
type AuditRecord struct {
	ID       int64           `db:"id"`
	At       time.Time       `db:"at"`
	Instance string          `db:"instance"`
	Actor    string          `db:"actor"`
	Action   string          `db:"action"`
	Target   string          `db:"target"`
	Addr     string          `db:"addr"`
	Detail   json.RawMessage `db:"detail"`
}

const auditColumns = `id, at, instance, actor, action, target, addr, detail`

// Audit appends an entry to the audit log, which refuses updates and deletes.
func (s *Store) Audit(ctx context.Context, e AuditEntry) error {
	return auditTx(ctx, s.pool, e)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// auditTx appends an entry on db, so an action and its record can share a
// transaction.
func auditTx(ctx context.Context, db querier, e AuditEntry) error {
	args, err := auditArgs(e)
	if err != nil {
		return err
	}
	var id int64
	return db.QueryRow(ctx, insertAudit+` returning id`, args...).Scan(&id)
}

// queueAudit is auditTx in a batch of the transaction's statements.
func queueAudit(b *pgx.Batch, e AuditEntry) error {
	args, err := auditArgs(e)
	if err != nil {
		return err
	}
	b.Queue(insertAudit, args...)
	return nil
}

const insertAudit = `insert into audit_log (instance, actor, action, target, addr, detail)
		values ($1, $2, $3, $4, $5, $6)`

// auditArgs are insertAudit's arguments for e; no detail is an empty one.
func auditArgs(e AuditEntry) ([]any, error) {
	detail := e.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	raw, err := json.Marshal(detail)
	if err != nil {
		return nil, err
	}
	return []any{e.Instance, e.Actor, e.Action, e.Target, e.Addr, raw}, nil
}

// AuditFilter narrows the audit log. Action matches as a prefix, so
// "round." finds every round action.
type AuditFilter struct {
	Actor  string
	Action string
	Target string
	Since  time.Time
	// Before pages back: only rows older than this id.
	Before int64
	Limit  int
}

// AuditLog lists audit rows newest first.
func (s *Store) AuditLog(ctx context.Context, f AuditFilter) ([]AuditRecord, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	return readRows[AuditRecord](ctx, s, `select `+auditColumns+` from audit_log
		where ($1 = '' or actor = $1)
		  and ($2 = '' or starts_with(action, $2))
		  and ($3 = '' or target = $3)
		  and ($4::timestamptz is null or at >= $4)
		  and ($5 = 0 or id < $5)
		order by id desc limit $6`,
		f.Actor, f.Action, f.Target, nullTime(f.Since), f.Before, f.Limit)
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
