package store

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
)

// AgentCall returns the id of owner's unfinished call started by the agent
// request requestID (its JSON-RPC id as sent) with the API token tokenID,
// or the OAuth client oauthClient; the newest if there are several. A call
// the agent was given as a task is not one: the tasks extension stops a
// task with tasks/cancel only, never notifications/cancelled. Nor are a
// 2025-11-25 session's calls: their request ids are the session's own
// (AgentRequestCall).
func (s *Store) AgentCall(ctx context.Context, owner, requestID string, tokenID int64, oauthClient string) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, `
		select id from calls
		where owner = $1 and agent is not null and agent->>'request_id' = $2 and not agent ? 'session'
		  and coalesce((agent->>'token_id')::bigint, 0) = $3 and coalesce(agent->>'oauth_client', '') = $4
		  and status in ('queued', 'running', 'input_required', 'authorization_required', 'approval_required')
		  and not coalesce((agent->>'task')::boolean, false)
		order by created_at desc limit 1`, owner, requestID, tokenID, oauthClient).Scan(&id)
	if err == pgx.ErrNoRows {
		return "", notFound("call")
	}
	return id, err
}

// CallServerError returns the JSON-RPC error ({"code", "message"}) the
// server answered a failed call with, or nil.
func (s *Store) CallServerError(ctx context.Context, id string) (json.RawMessage, error) {
	var out json.RawMessage
	err := s.pool.QueryRow(ctx, `select server_error from calls where id = $1`, id).Scan(&out)
	return out, translate(err, "call")
}
