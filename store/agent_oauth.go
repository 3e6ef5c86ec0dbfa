package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Rounds is also an OAuth 2.1 authorization server for agents (package
// authserver). These are its clients, requests, grants and tokens; tokens
// and codes are kept only as SHA-256 hashes.

// AgentClient is an agent's OAuth client: registered dynamically, or named
// by the https URL of its client ID metadata document (MetadataURL).
type AgentClient struct {
	ID           string    `db:"id"`
	Name         string    `db:"name"`
	RedirectURIs []string  `db:"redirect_uris"`
	SecretHash   []byte    `db:"secret_hash"`
	MetadataURL  bool      `db:"metadata_url"`
	FetchedAt    time.Time `db:"fetched_at"`
	CreatedAt    time.Time `db:"created_at"`
}

const agentClientColumns = `id, name, redirect_uris, secret_hash, metadata_url, fetched_at, created_at`

// SaveAgentClient adds a client, or refreshes one read again from its
// metadata document. Clients that registered a day ago or more and that
// nobody allowed are forgotten then.
func (s *Store) SaveAgentClient(ctx context.Context, c AgentClient) error {
	_, err := s.pool.Exec(ctx, `delete from agent_clients c where c.created_at < now() - interval '1 day'
		and not exists (select 1 from agent_grants g where g.client_id = c.id)`)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `insert into agent_clients (id, name, redirect_uris, secret_hash, metadata_url)
		values ($1, $2, $3, $4, $5)
		on conflict (id) do update set name = excluded.name, redirect_uris = excluded.redirect_uris,
			fetched_at = now() where agent_clients.metadata_url`,
		c.ID, c.Name, c.RedirectURIs, c.SecretHash, c.MetadataURL)
	return translate(err, "client")
}

// AgentClient returns a client by its id.
func (s *Store) AgentClient(ctx context.Context, id string) (*AgentClient, error) {
	rows, _ := s.pool.Query(ctx, `select `+agentClientColumns+` from agent_clients where id = $1`, id)
	c, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[AgentClient])
	return c, translate(err, "client")
}

// AgentAuthRequest is an authorization request, from /authorize until its code
// is exchanged. Resources are the server names it asks for; GrantID and
// UserID are set once the person consented.
type AgentAuthRequest struct {
	ID            string    `db:"id"`
	ClientID      string    `db:"client_id"`
	RedirectURI   string    `db:"redirect_uri"`
	State         string    `db:"state"`
	Nonce         string    `db:"nonce"`
	Scopes        []string  `db:"scopes"`
	ResponseMode  string    `db:"response_mode"`
	CodeChallenge string    `db:"code_challenge"`
	Resources     []string  `db:"resources"`
	GrantID       *int64    `db:"grant_id"`
	UserID        *int64    `db:"user_id"`
	ExpiresAt     time.Time `db:"expires_at"`
	CreatedAt     time.Time `db:"created_at"`
}

const agentAuthRequestColumns = `r.id::text as id, r.client_id, r.redirect_uri, r.state, r.nonce, r.scopes, r.response_mode,
	r.code_challenge, r.resources, r.grant_id, g.user_id, r.expires_at, r.created_at`

// CreateAgentAuthRequest stores a new authorization request (and forgets
// those long expired).
func (s *Store) CreateAgentAuthRequest(ctx context.Context, r AgentAuthRequest) error {
	if r.Scopes == nil {
		r.Scopes = []string{}
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `delete from agent_auth_requests where expires_at < now() - interval '1 hour'`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `insert into agent_auth_requests (id, client_id, redirect_uri, state, nonce, scopes,
			response_mode, code_challenge, resources, expires_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			r.ID, r.ClientID, r.RedirectURI, r.State, r.Nonce, r.Scopes, r.ResponseMode, r.CodeChallenge,
			r.Resources, r.ExpiresAt)
		return translate(err, "authorization request")
	})
}

// AgentAuthRequest returns an unexpired authorization request by its id.
func (s *Store) AgentAuthRequest(ctx context.Context, id string) (*AgentAuthRequest, error) {
	return s.agentAuthRequest(ctx, `r.id::text = $1`, id)
}

// AgentAuthRequestByCode returns the unexpired request a code was issued for.
func (s *Store) AgentAuthRequestByCode(ctx context.Context, codeHash []byte) (*AgentAuthRequest, error) {
	return s.agentAuthRequest(ctx, `r.code_hash = $1`, codeHash)
}

func (s *Store) agentAuthRequest(ctx context.Context, where string, arg any) (*AgentAuthRequest, error) {
	rows, _ := s.pool.Query(ctx, `select `+agentAuthRequestColumns+`
		from agent_auth_requests r left join agent_grants g on g.id = r.grant_id
		where `+where+` and r.expires_at > now()`, arg)
	r, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[AgentAuthRequest])
	return r, translate(err, "authorization request")
}

// SetAgentAuthCode records the code issued for a consented request; a request
// gets one code only.
func (s *Store) SetAgentAuthCode(ctx context.Context, id string, codeHash []byte) error {
	tag, err := s.pool.Exec(ctx, `update agent_auth_requests set code_hash = $2
		where id::text = $1 and grant_id is not null and code_hash is null and expires_at > now()`, id, codeHash)
	if err != nil {
		return translate(err, "authorization request")
	}
	if tag.RowsAffected() == 0 {
		return notFound("authorization request")
	}
	return nil
}

// DeleteAgentAuthRequest forgets a request: its code was exchanged, or it was
// refused.
func (s *Store) DeleteAgentAuthRequest(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `delete from agent_auth_requests where id::text = $1`, id)
	return err
}

// ApproveAgentAuthRequest records a person's consent to a request: their grant
// to its client names the request's servers too. The audit entry is
// written in the same transaction.
func (s *Store) ApproveAgentAuthRequest(ctx context.Context, id string, userID int64, e AuditEntry) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var grantID int64
		err := tx.QueryRow(ctx, `
			insert into agent_grants (user_id, client_id, servers)
			select $2, r.client_id, r.resources from agent_auth_requests r
			where r.id::text = $1 and r.grant_id is null and r.expires_at > now()
			on conflict (user_id, client_id) do update
				set servers = array(select distinct unnest(agent_grants.servers || excluded.servers) order by 1)
			returning id`, id, userID).Scan(&grantID)
		if err != nil {
			return translate(err, "authorization request")
		}
		tag, err := tx.Exec(ctx, `update agent_auth_requests set grant_id = $2 where id::text = $1 and grant_id is null`, id, grantID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 { // answered meanwhile, on this instance or another
			return notFound("authorization request")
		}
		return auditTx(ctx, tx, e)
	})
}

// AgentGrant is a person's consent to a client: a connected agent.
type AgentGrant struct {
	ID          int64      `db:"id"`
	UserID      int64      `db:"user_id"`
	ClientID    string     `db:"client_id"`
	ClientName  string     `db:"client_name"`
	MetadataURL bool       `db:"metadata_url"`
	Servers     []string   `db:"servers"`
	CreatedAt   time.Time  `db:"created_at"`
	LastUsedAt  *time.Time `db:"last_used_at"`
}

// AgentGrants lists a person's connected agents, newest first.
func (s *Store) AgentGrants(ctx context.Context, userID int64) ([]AgentGrant, error) {
	rows, _ := s.pool.Query(ctx, `select g.id, g.user_id, g.client_id, c.name as client_name, c.metadata_url,
			g.servers, g.created_at, g.last_used_at
		from agent_grants g join agent_clients c on c.id = g.client_id
		where g.user_id = $1 order by g.created_at desc, g.id desc`, userID)
	return pgx.CollectRows(rows, pgx.RowToStructByName[AgentGrant])
}

// DeleteAgentGrant disconnects one of a person's agents: the grant and
// every token issued under it are gone at once, on every instance. The
// audit entry, written in the same transaction, names the client.
func (s *Store) DeleteAgentGrant(ctx context.Context, userID, grantID int64, e AuditEntry) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var client string
		err := tx.QueryRow(ctx, `delete from agent_grants where id = $1 and user_id = $2 returning client_id`,
			grantID, userID).Scan(&client)
		if err != nil {
			return translate(err, "connected agent")
		}
		e.Target = client
		return auditTx(ctx, tx, e)
	})
}
