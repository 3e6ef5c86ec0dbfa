package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// AgentTokens are the tokens issued at once under a grant: an access token
// and, but for a client that cannot refresh, a refresh token. Hashes only.
type AgentTokens struct {
	GrantID       int64
	Servers       []string
	Scopes        []string
	AccessHash    []byte
	AccessExpires time.Time
	// RefreshHash is nil for none.
	RefreshHash    []byte
	RefreshExpires time.Time
	// Rotates is the hash of the refresh token these replace, Consumes the
	// authorization request whose code is exchanged; either is used up
	// here, once: a second use finds nothing.
	Rotates  []byte
	Consumes string
}

// CreateAgentTokens stores the tokens, using up the refresh token they
// replace; ErrNotFound when that one was used already, expired or revoked.
func (s *Store) CreateAgentTokens(ctx context.Context, t AgentTokens) error {
	if t.Scopes == nil {
		t.Scopes = []string{}
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if t.Rotates != nil {
			tag, err := tx.Exec(ctx, `update agent_tokens set used_at = now()
				where hash = $1 and kind = 'refresh' and used_at is null and expires_at > now()`, t.Rotates)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return notFound("refresh token")
			}
		}
		if t.Consumes != "" {
			tag, err := tx.Exec(ctx, `delete from agent_auth_requests where id::text = $1 and code_hash is not null`, t.Consumes)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return notFound("authorization code")
			}
			if _, err := tx.Exec(ctx, `delete from agent_tokens where expires_at < now() - interval '1 day'`); err != nil {
				return err
			}
		}
		b := &pgx.Batch{}
		b.Queue(`insert into agent_tokens (hash, kind, grant_id, servers, scopes, expires_at)
			values ($1, 'access', $2, $3, $4, $5)`, t.AccessHash, t.GrantID, t.Servers, t.Scopes, t.AccessExpires)
		if t.RefreshHash != nil {
			b.Queue(`insert into agent_tokens (hash, kind, grant_id, servers, scopes, expires_at)
				values ($1, 'refresh', $2, $3, $4, $5)`, t.RefreshHash, t.GrantID, t.Servers, t.Scopes, t.RefreshExpires)
		}
		return translate(tx.SendBatch(ctx, b).Close(), "token")
	})
}

// AgentTokenGrant is what a token was issued for.
type AgentTokenGrant struct {
	GrantID    int64     `db:"grant_id"`
	UserID     int64     `db:"user_id"`
	ClientID   string    `db:"client_id"`
	ClientName string    `db:"client_name"`
	Servers    []string  `db:"servers"`
	Scopes     []string  `db:"scopes"`
	GrantedAt  time.Time `db:"granted_at"`
	Stale      bool      `db:"stale"` // the grant's last use is a minute old or more
}

// AgentRefreshToken returns what an unused, unexpired refresh token was
// issued for.
func (s *Store) AgentRefreshToken(ctx context.Context, hash []byte) (*AgentTokenGrant, error) {
	rows, _ := s.pool.Query(ctx, `select t.grant_id, g.user_id, g.client_id, c.name as client_name, t.servers, t.scopes,
			g.created_at as granted_at, false as stale
		from agent_tokens t join agent_grants g on g.id = t.grant_id join agent_clients c on c.id = g.client_id
		where t.hash = $1 and t.kind = 'refresh' and t.used_at is null and t.expires_at > now()`, hash)
	g, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[AgentTokenGrant])
	return g, translate(err, "refresh token")
}

// AgentAccess returns the user and grant of an unexpired access token;
// ErrNotFound for a token revoked, expired, unknown, or of a disabled
// user or one whose sign-on provider no longer vouches for them. The
// grant's last use is written at most once a minute.
func (s *Store) AgentAccess(ctx context.Context, hash []byte) (*User, *AgentTokenGrant, error) {
	var u User
	var g AgentTokenGrant
	err := s.pool.QueryRow(ctx, `
		select t.grant_id, g.client_id, c.name, t.servers, t.scopes, g.created_at,
		       (g.last_used_at is null or g.last_used_at < now() - interval '1 minute'),
		       u.id, u.name, u.password_hash, u.is_admin, u.disabled, u.created_at, u.updated_at, u.time_zone
		from agent_tokens t join agent_grants g on g.id = t.grant_id join agent_clients c on c.id = g.client_id
			join users u on u.id = g.user_id left join user_identities i on i.user_id = u.id
		where t.hash = $1 and t.kind = 'access' and t.expires_at > now() and not u.disabled
			and i.refused_at is null`, hash).Scan(
		&g.GrantID, &g.ClientID, &g.ClientName, &g.Servers, &g.Scopes, &g.GrantedAt, &g.Stale,
		&u.ID, &u.Name, &u.PasswordHash, &u.IsAdmin, &u.Disabled, &u.CreatedAt, &u.UpdatedAt, &u.TimeZone)
	if err != nil {
		return nil, nil, translate(err, "token")
	}
	g.UserID = u.ID
	if g.Stale {
		if _, err := s.pool.Exec(ctx, `update agent_grants set last_used_at = now() where id = $1`, g.GrantID); err != nil {
			return nil, nil, err
		}
	}
	return &u, &g, nil
}

// RevokeAgentToken revokes a client's token (RFC 7009). Revoking a refresh
// token revokes the access tokens of its grant too. An unknown token is
// not an error.
func (s *Store) RevokeAgentToken(ctx context.Context, hash []byte, clientID string) error {
	_, err := s.pool.Exec(ctx, `
		with t as (
			select t.hash, t.kind, t.grant_id from agent_tokens t join agent_grants g on g.id = t.grant_id
			where t.hash = $1 and g.client_id = $2
		)
		delete from agent_tokens o using t
		where o.hash = t.hash or (t.kind = 'refresh' and o.grant_id = t.grant_id and o.kind = 'access')`, hash, clientID)
	return err
}
