package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a registered MCP server.
type Server struct {
	ID              int64           `db:"id"`
	Name            string          `db:"name"`
	URL             string          `db:"url"`
	Enabled         bool            `db:"enabled"`
	ProtocolVersion string          `db:"protocol_version"`
	Tools           json.RawMessage `db:"tools"`
	ToolsExpiresAt  *time.Time      `db:"tools_expires_at"`
	HeaderName      string          `db:"header_name"`
	HeaderValueEnc  []byte          `db:"header_value_enc"`
	CreatedAt       time.Time       `db:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at"`
}

const serverColumns = `id, name, url, enabled, protocol_version, tools, tools_expires_at, header_name,
	header_value_enc, created_at, updated_at`

// UpsertServer registers a server by name, or points the name at a new URL.
func (s *Store) UpsertServer(ctx context.Context, name, url string) (*Server, error) {
	rows, _ := s.pool.Query(ctx, `
		insert into servers (name, url) values ($1, $2)
		on conflict (name) do update
		set url = excluded.url,
		    tools = case when servers.url = excluded.url then servers.tools end,
		    tools_expires_at = case when servers.url = excluded.url then servers.tools_expires_at end,
		    updated_at = now()
		returning `+serverColumns, name, url)
	srv, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Server])
	return srv, translate(err, "server "+name)
}

// Servers lists enabled servers by name.
func (s *Store) Servers(ctx context.Context) ([]Server, error) {
	rows, _ := s.pool.Query(ctx, `select `+serverColumns+` from servers where enabled order by name`)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Server])
}

// ServerByName returns an enabled server.
func (s *Store) ServerByName(ctx context.Context, name string) (*Server, error) {
	rows, _ := s.pool.Query(ctx, `select `+serverColumns+` from servers where name = $1 and enabled`, name)
	srv, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Server])
	return srv, translate(err, "server "+name)
}

// SetServerTools caches a server's tool catalog until expires.
func (s *Store) SetServerTools(ctx context.Context, id int64, tools json.RawMessage, protocol string, expires time.Time) error {
	_, err := s.pool.Exec(ctx, `
		update servers set tools = $2, protocol_version = $3, tools_expires_at = $4, updated_at = now()
		where id = $1`, id, tools, protocol, expires)
	return err
}

// SetServerProtocol pins a server to a protocol revision, or sets it back
// to "auto".
func (s *Store) SetServerProtocol(ctx context.Context, name, protocol string) error {
	if protocol == "" {
		protocol = "auto"
	}
	_, err := s.pool.Exec(ctx, `update servers set protocol = $2, updated_at = now() where name = $1 and protocol <> $2`, name, protocol)
	return err
}
