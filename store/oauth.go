package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CallAuthorizationRequired is the status of a call waiting for its owner
// (or an admin, for a server shared by everyone) to sign in at the server's
// authorization server.
const CallAuthorizationRequired = "authorization_required"

// OAuth modes of a server: who signs in.
const (
	OAuthPerson = "person" // each person, for themselves
	OAuthShared = "shared" // an admin, once, for everyone
)

// seal encrypts a secret with the credentials key, bound to ad so it cannot
// be moved to another row.
func (s *Store) seal(value, ad string) ([]byte, error) {
	if s.aead == nil {
		return nil, errors.New("no credentials key")
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, []byte(value), []byte(ad)), nil
}

func (s *Store) sealOptional(value, ad string) ([]byte, error) {
	if value == "" {
		return nil, nil
	}
	return s.seal(value, ad)
}

func (s *Store) open(enc []byte, ad string) (string, error) {
	if enc == nil {
		return "", nil
	}
	if s.aead == nil || len(enc) < s.aead.NonceSize() {
		return "", errors.New("a stored secret cannot be read")
	}
	v, err := s.aead.Open(nil, enc[:s.aead.NonceSize()], enc[s.aead.NonceSize():], []byte(ad))
	if err != nil {
		return "", errors.New("a stored secret cannot be read with this key")
	}
	return string(v), nil
}

// OAuthClient is a client registered at an authorization server.
type OAuthClient struct {
	ClientID     string
	ClientSecret string
	// AuthMethod is how the client authenticates at the token endpoint:
	// none, client_secret_basic or client_secret_post.
	AuthMethod string
}

// OAuthClientFor returns the client registered dynamically at issuer for
// redirectURI.
func (s *Store) OAuthClientFor(ctx context.Context, issuer, redirectURI string) (*OAuthClient, error) {
	var c OAuthClient
	var enc []byte
	err := s.pool.QueryRow(ctx, `select client_id, client_secret_enc, auth_method from oauth_clients
		where issuer = $1 and redirect_uri = $2`, issuer, redirectURI).Scan(&c.ClientID, &enc, &c.AuthMethod)
	if err != nil {
		return nil, translate(err, "client")
	}
	if c.ClientSecret, err = s.open(enc, "client:"+issuer); err != nil {
		return nil, err
	}
	return &c, nil
}

// SaveOAuthClient keeps a dynamic registration for issuer.
func (s *Store) SaveOAuthClient(ctx context.Context, issuer, redirectURI string, c OAuthClient) error {
	enc, err := s.sealOptional(c.ClientSecret, "client:"+issuer)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `insert into oauth_clients (issuer, redirect_uri, client_id, client_secret_enc, auth_method)
		values ($1, $2, $3, $4, $5) on conflict (issuer, redirect_uri) do update
		set client_id = excluded.client_id, client_secret_enc = excluded.client_secret_enc,
		    auth_method = excluded.auth_method, created_at = now()`,
		issuer, redirectURI, c.ClientID, enc, c.AuthMethod)
	return err
}

// ServerOAuthClient returns the client an admin pre-registered for a
// server, if any.
func (s *Store) ServerOAuthClient(srv *Server) (*OAuthClient, error) {
	if srv.OAuthClientID == "" {
		return nil, nil
	}
	secret, err := s.open(srv.OAuthClientSecretEnc, "server-client:"+srv.Name)
	if err != nil {
		return nil, err
	}
	method := "none"
	if secret != "" {
		method = "client_secret_basic"
	}
	return &OAuthClient{ClientID: srv.OAuthClientID, ClientSecret: secret, AuthMethod: method}, nil
}

// SetServerOAuth sets who authorizes at a server, and the client an admin
// registered for it there (an empty id removes it).
func (s *Store) SetServerOAuth(ctx context.Context, name, mode, clientID, clientSecret string) error {
	s.forgetServers() // see ServerToCall
	if mode != OAuthPerson && mode != OAuthShared {
		return &Error{Kind: ErrInvalid, Message: "Choose who signs in: each person, or an admin for everyone."}
	}
	enc, err := s.sealOptional(clientSecret, "server-client:"+name)
	if err != nil {
		return err
	}
	return s.execOne(ctx, "server "+name, `update servers set oauth_mode = $2, oauth_client_id = $3,
		oauth_client_secret_enc = $4, updated_at = now() where name = $1`, name, mode, strings.TrimSpace(clientID), enc)
}

// MarkOAuthRequired records that a server asked for a token: where its
// metadata is, and the scopes it asked for, added to those asked before (a
// step-up keeps what was granted).
func (s *Store) MarkOAuthRequired(ctx context.Context, serverID int64, resourceMetadata, scope string) error {
	s.forgetServers() // see ServerToCall
	_, err := s.pool.Exec(ctx, `update servers set oauth_required = true,
		oauth_resource_metadata = case when $2 = '' then oauth_resource_metadata else $2 end,
		oauth_scope = (select coalesce(string_agg(distinct x, ' ' order by x), '') from
			unnest(string_to_array(trim(oauth_scope || ' ' || $3), ' ')) x where x <> ''),
		updated_at = now() where id = $1`, serverID, resourceMetadata, scope)
	return err
}

// NeedAuthorization parks the request of round seq until its owner signs
// in: the call waits, saying why, and goes on once a token is stored.
func (s *Store) NeedAuthorization(ctx context.Context, callID string, seq int, message string) error {
	tag, err := s.pool.Exec(ctx, `update calls set status = 'authorization_required', error = $3, retryable = false,
		updated_at = now() where id = $1 and current_seq = $2 and status in ('queued', 'running')`, callID, seq, message)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return conflict("call %s moved on before request %d finished", callID, seq)
	}
	return nil
}

// OAuthFlow is an authorization under way.
type OAuthFlow struct {
	State         string
	Owner         string // "" for everyone
	StartedBy     string
	ServerID      int64
	ServerName    string
	CallID        *string
	Issuer        string
	IssSupported  bool
	TokenEndpoint string
	Client        OAuthClient
	RedirectURI   string
	Resource      string
	Scope         string
	Verifier      string
	ExpiresAt     time.Time
}

// CreateOAuthFlow stores an authorization about to start.
func (s *Store) CreateOAuthFlow(ctx context.Context, f OAuthFlow) error {
	secret, err := s.sealOptional(f.Client.ClientSecret, "flow:"+f.State)
	if err != nil {
		return err
	}
	verifier, err := s.seal(f.Verifier, "flow:"+f.State)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `insert into oauth_flows (state, owner, started_by, server_id, call_id, issuer,
		iss_supported, token_endpoint, client_id, client_secret_enc, auth_method, redirect_uri, resource, scope,
		verifier_enc, expires_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		f.State, f.Owner, f.StartedBy, f.ServerID, f.CallID, f.Issuer, f.IssSupported, f.TokenEndpoint,
		f.Client.ClientID, secret, f.Client.AuthMethod, f.RedirectURI, f.Resource, f.Scope, verifier, f.ExpiresAt)
	return err
}

// TakeOAuthFlow finds the authorization a browser came back from by its
// state, and marks it used: of any number of requests with the same state,
// on any instance, one gets it; the rest are told it was used.
func (s *Store) TakeOAuthFlow(ctx context.Context, state string) (*OAuthFlow, error) {
	f := OAuthFlow{State: state}
	var secret, verifier []byte
	err := s.pool.QueryRow(ctx, `update oauth_flows f set used_at = now()
		from servers s where s.id = f.server_id and f.state = $1 and f.used_at is null and f.expires_at > now()
		returning f.owner, f.started_by, f.server_id, s.name, f.call_id::text, f.issuer, f.iss_supported,
		          f.token_endpoint, f.client_id, f.client_secret_enc, f.auth_method, f.redirect_uri, f.resource,
		          f.scope, f.verifier_enc, f.expires_at`, state).Scan(
		&f.Owner, &f.StartedBy, &f.ServerID, &f.ServerName, &f.CallID, &f.Issuer, &f.IssSupported,
		&f.TokenEndpoint, &f.Client.ClientID, &secret, &f.Client.AuthMethod, &f.RedirectURI, &f.Resource,
		&f.Scope, &verifier, &f.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		var used, expired bool
		err := s.pool.QueryRow(ctx, `select used_at is not null, expires_at <= now() from oauth_flows where state = $1`,
			state).Scan(&used, &expired)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, &Error{Kind: ErrInvalid, Message: "This sign-in does not match one we started (the state is unknown). Start it again from Rounds."}
		case err != nil:
			return nil, err
		case used:
			return nil, &Error{Kind: ErrConflict, Message: "This sign-in was already used. Start it again from Rounds if you are not connected."}
		default:
			return nil, &Error{Kind: ErrConflict, Message: "This sign-in took too long and expired. Start it again from Rounds."}
		}
	}
	if err != nil {
		return nil, err
	}
	if f.Client.ClientSecret, err = s.open(secret, "flow:"+state); err != nil {
		return nil, err
	}
	if f.Verifier, err = s.open(verifier, "flow:"+state); err != nil {
		return nil, err
	}
	return &f, nil
}

// OAuthToken is a connection: the tokens one person (or everyone) has for
// a server, and how to refresh them.
type OAuthToken struct {
	ServerID      int64
	Owner         string
	Issuer        string
	TokenEndpoint string
	Client        OAuthClient
	Resource      string
	Scope         string
	Access        string
	Refresh       string
	ExpiresAt     *time.Time
}

func tokenAD(serverID int64, owner string) string { return fmt.Sprintf("token:%d:%s", serverID, owner) }

// SaveOAuthToken stores the tokens an authorization brought, and puts back
// in the queue every call that was waiting for them, in one transaction.
func (s *Store) SaveOAuthToken(ctx context.Context, t OAuthToken) (resumed int, err error) {
	ad := tokenAD(t.ServerID, t.Owner)
	access, err := s.seal(t.Access, ad)
	if err != nil {
		return 0, err
	}
	refresh, err := s.sealOptional(t.Refresh, ad)
	if err != nil {
		return 0, err
	}
	secret, err := s.sealOptional(t.Client.ClientSecret, ad)
	if err != nil {
		return 0, err
	}
	err = s.inTx(ctx, func(tx *txn) error {
		if _, err := tx.Exec(ctx, `insert into oauth_tokens (server_id, owner, issuer, token_endpoint, client_id,
			client_secret_enc, auth_method, resource, scope, access_enc, refresh_enc, expires_at)
			values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			on conflict (server_id, owner) do update set issuer = excluded.issuer,
			    token_endpoint = excluded.token_endpoint, client_id = excluded.client_id,
			    client_secret_enc = excluded.client_secret_enc, auth_method = excluded.auth_method,
			    resource = excluded.resource, scope = excluded.scope, access_enc = excluded.access_enc,
			    refresh_enc = excluded.refresh_enc, expires_at = excluded.expires_at, updated_at = now()`,
			t.ServerID, t.Owner, t.Issuer, t.TokenEndpoint, t.Client.ClientID, secret, t.Client.AuthMethod,
			t.Resource, t.Scope, access, refresh, t.ExpiresAt); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `update calls set status = 'queued', error = null, updated_at = now()
			where server_id = $1 and status = 'authorization_required' and ($2 = '' or owner = $2)
			returning id::text, current_seq`, t.ServerID, t.Owner)
		type waiting struct {
			ID  string
			Seq int
		}
		calls, err := pgx.CollectRows(rows, pgx.RowToStructByPos[waiting])
		if err != nil {
			return err
		}
		for _, c := range calls {
			if err := s.enqueueTx(ctx, tx, nil, c.ID, c.Seq); err != nil {
				return err
			}
		}
		resumed = len(calls)
		return nil
	})
	return resumed, err
}

const oauthTokenColumns = `t.server_id, t.owner, t.issuer, t.token_endpoint, t.client_id, t.client_secret_enc,
	t.auth_method, t.resource, t.scope, t.access_enc, t.refresh_enc, t.expires_at`

func (s *Store) scanToken(row pgx.Row) (*OAuthToken, error) {
	var t OAuthToken
	var secret, access, refresh []byte
	err := row.Scan(&t.ServerID, &t.Owner, &t.Issuer, &t.TokenEndpoint, &t.Client.ClientID, &secret,
		&t.Client.AuthMethod, &t.Resource, &t.Scope, &access, &refresh, &t.ExpiresAt)
	if err != nil {
		return nil, translate(err, "connection")
	}
	ad := tokenAD(t.ServerID, t.Owner)
	if t.Client.ClientSecret, err = s.open(secret, ad); err != nil {
		return nil, err
	}
	if t.Access, err = s.open(access, ad); err != nil {
		return nil, err
	}
	if t.Refresh, err = s.open(refresh, ad); err != nil {
		return nil, err
	}
	return &t, nil
}

// tokenOwner picks whose connection a person uses at a server: their own,
// or everyone's on a server an admin connected for all.
const tokenOwner = `case (select oauth_mode from servers where id = $1) when 'shared' then '' else $2 end`

// OAuthTokenFor returns the connection person uses at a server, or
// ErrNotFound.
func (s *Store) OAuthTokenFor(ctx context.Context, serverID int64, person string) (*OAuthToken, error) {
	return s.scanToken(s.pool.QueryRow(ctx, `select `+oauthTokenColumns+` from oauth_tokens t
		where t.server_id = $1 and t.owner = `+tokenOwner, serverID, person))
}

// RefreshOAuthToken renews a connection whose access token seen ran out or
// was turned down by the server, one instance at a time: the row is locked
// while refresh runs, and an instance that waited finds a token other than
// the one it saw, already renewed, and uses that. A refresh that fails
// removes the connection, so the person is asked to sign in again.
func (s *Store) RefreshOAuthToken(ctx context.Context, serverID int64, person, seen string,
	refresh func(*OAuthToken) (access, refreshToken string, expires *time.Time, err error)) (*OAuthToken, error) {
	var out *OAuthToken
	var failed error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := s.scanToken(tx.QueryRow(ctx, `select `+oauthTokenColumns+` from oauth_tokens t
			where t.server_id = $1 and t.owner = `+tokenOwner+` for update`, serverID, person))
		if err != nil {
			return err
		}
		if t.Access != seen {
			out = t // renewed meanwhile
			return nil
		}
		access, rt, expires, err := refresh(t)
		if err != nil {
			failed = err
			_, err := tx.Exec(ctx, `delete from oauth_tokens where server_id = $1 and owner = $2`, t.ServerID, t.Owner)
			return err
		}
		if rt == "" {
			rt = t.Refresh // the authorization server kept the old one
		}
		ad := tokenAD(t.ServerID, t.Owner)
		accessEnc, err := s.seal(access, ad)
		if err != nil {
			return err
		}
		refreshEnc, err := s.sealOptional(rt, ad)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update oauth_tokens set access_enc = $3, refresh_enc = $4, expires_at = $5,
			updated_at = now() where server_id = $1 and owner = $2`, t.ServerID, t.Owner, accessEnc, refreshEnc, expires); err != nil {
			return err
		}
		t.Access, t.Refresh, t.ExpiresAt = access, rt, expires
		out = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

// ForgetOAuthToken ends the connection person uses at a server (theirs, or
// everyone's on a shared server), when the server turned it down: they are
// asked to sign in again. No connection is no error.
func (s *Store) ForgetOAuthToken(ctx context.Context, serverID int64, person string) error {
	_, err := s.pool.Exec(ctx, `delete from oauth_tokens where server_id = $1 and owner = `+tokenOwner, serverID, person)
	return err
}

// DeleteOAuthToken ends a connection (owner "" is everyone's).
func (s *Store) DeleteOAuthToken(ctx context.Context, serverID int64, owner string) error {
	tag, err := s.pool.Exec(ctx, `delete from oauth_tokens where server_id = $1 and owner = $2`, serverID, owner)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("connection")
	}
	return nil
}

// Connection is a connection as pages show it: never its tokens.
type Connection struct {
	Server    string    `db:"server"`
	Owner     string    `db:"owner"`
	Issuer    string    `db:"issuer"`
	Scope     string    `db:"scope"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}

// Connections lists connections: one person's (and the shared ones they
// use) when owner is set, everyone's when it is empty.
func (s *Store) Connections(ctx context.Context, owner string) ([]Connection, error) {
	rows, _ := s.pool.Query(ctx, `select s.name as server, t.owner, t.issuer, t.scope, t.created_at, t.updated_at
		from oauth_tokens t join servers s on s.id = t.server_id
		where $1 = '' or t.owner = $1 or (t.owner = '' and s.oauth_mode = 'shared')
		order by s.name, t.owner`, owner)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Connection])
}
