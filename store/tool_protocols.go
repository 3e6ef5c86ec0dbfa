package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ToolProtocol is a revision Rounds learnt a tool needs.
type ToolProtocol struct {
	Tool     string    `db:"tool"`
	Protocol string    `db:"protocol"`
	Reason   string    `db:"reason"`
	LearntAt time.Time `db:"learnt_at"`
}

// LearnSessionTool records that a call's tool asks over a 2025-11-25
// session (reason is what the server said), so the tool's next calls go
// over one, and marks the call so its page can offer to start it again.
func (s *Store) LearnSessionTool(ctx context.Context, callID string, serverID int64, tool, protocol, reason string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			insert into tool_protocols (server_id, tool, protocol, reason) values ($1, $2, $3, $4)
			on conflict (server_id, tool) do update set protocol = excluded.protocol, reason = excluded.reason, learnt_at = now()`,
			serverID, tool, protocol, reason); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `update calls set asks_over_session = true, updated_at = now() where id = $1`, callID)
		return err
	})
}

// ToolProtocols lists what was learnt about a server's tools.
func (s *Store) ToolProtocols(ctx context.Context, serverID int64) ([]ToolProtocol, error) {
	rows, _ := s.pool.Query(ctx, `select tool, protocol, reason, learnt_at from tool_protocols
		where server_id = $1 order by tool`, serverID)
	return pgx.CollectRows(rows, pgx.RowToStructByName[ToolProtocol])
}

// ForgetToolProtocol forgets what was learnt about one tool of a server,
// or about all of them when tool is "".
func (s *Store) ForgetToolProtocol(ctx context.Context, serverID int64, tool string) error {
	_, err := s.pool.Exec(ctx, `delete from tool_protocols where server_id = $1 and ($2 = '' or tool = $2)`, serverID, tool)
	return err
}
