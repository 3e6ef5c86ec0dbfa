package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// AgentSession is a 2025-11-25 agent's session with one server through the
// front door, from its initialize to its DELETE. ID is the SHA-256 (hex) of
// the Mcp-Session-Id the agent was given; the id itself is never stored.
type AgentSession struct {
	ID     string
	Server string
	UserID int64
	// Agent is what the agent said of itself at initialize, and how it
	// signed in; Agent.Session is ID.
	Agent     Agent
	CreatedAt time.Time
}

// sessionSeenEvery is how stale last_seen_at may grow before a request of
// the session writes it again: most requests only read their session.
const sessionSeenEvery = time.Minute

// CreateAgentSession stores a session begun by initialize.
func (s *Store) CreateAgentSession(ctx context.Context, as AgentSession) error {
	a := as.Agent
	_, err := s.pool.Exec(ctx, `insert into agent_sessions (id, server, user_id, token_id, oauth_client,
			oauth_client_name, client_name, client_version, protocol, can_form, can_url, can_sampling, can_roots)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		as.ID, as.Server, as.UserID, a.TokenID, a.OAuthClient, truncate(a.OAuthClientName, 200),
		truncate(a.Name, 200), truncate(a.Version, 100), a.Protocol, a.Can.Form, a.Can.URL, a.Can.Sampling, a.Can.Roots)
	return translate(err, "session")
}

// AgentSessionByID returns the session with this id (the hash) that has
// not ended; ErrNotFound otherwise. It notes that the session was seen,
// at most once a minute.
func (s *Store) AgentSessionByID(ctx context.Context, id string) (*AgentSession, error) {
	as := AgentSession{ID: id}
	a := &as.Agent
	var seen time.Time
	err := s.pool.QueryRow(ctx, `select server, user_id, token_id, oauth_client, oauth_client_name, client_name,
			client_version, protocol, can_form, can_url, can_sampling, can_roots, created_at, last_seen_at
		from agent_sessions where id = $1 and ended_at is null`, id).Scan(&as.Server, &as.UserID, &a.TokenID,
		&a.OAuthClient, &a.OAuthClientName, &a.Name, &a.Version, &a.Protocol,
		&a.Can.Form, &a.Can.URL, &a.Can.Sampling, &a.Can.Roots, &as.CreatedAt, &seen)
	if err != nil {
		return nil, translate(err, "session")
	}
	a.Session = id
	if time.Since(seen) > sessionSeenEvery {
		if _, err := s.pool.Exec(ctx, `update agent_sessions set last_seen_at = now() where id = $1`, id); err != nil {
			return nil, err
		}
	}
	return &as, nil
}

// EndAgentSession ends a session (the agent's DELETE). The calls it
// started go on. A session already ended, or not the user's, is
// ErrNotFound.
func (s *Store) EndAgentSession(ctx context.Context, id string, userID int64) error {
	tag, err := s.pool.Exec(ctx, `update agent_sessions set ended_at = now(), last_seen_at = now()
		where id = $1 and user_id = $2 and ended_at is null`, id, userID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("session")
	}
	return nil
}

// AgentRequestCall returns the id of the unfinished call that the request
// requestID (its JSON-RPC id, as sent) of session started; ErrNotFound
// when there is none.
func (s *Store) AgentRequestCall(ctx context.Context, session, requestID string) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, `select id::text from calls
		where agent ? 'session' and agent->>'session' = $1 and agent->>'request_id' = $2
		  and status in ('queued', 'running', 'input_required', 'authorization_required', 'approval_required')
		order by created_at desc limit 1`, session, requestID).Scan(&id)
	if err == pgx.ErrNoRows {
		return "", notFound("call")
	}
	return id, err
}

// DeleteAgentSessions deletes the sessions that ended, or were last seen,
// before before; an agent coming back with one is told to begin anew. It
// returns how many it deleted.
func (s *Store) DeleteAgentSessions(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `delete from agent_sessions where coalesce(ended_at, last_seen_at) < $1`, before)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
