package store

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// Server is a registered MCP server.
type Server struct {
	ID              int64  `db:"id"`
	Name            string `db:"name"`
	URL             string `db:"url"`
	Enabled         bool   `db:"enabled"`
	ProtocolVersion string `db:"protocol_version"`
	// Protocol is mcpclient.ProtocolAuto or the revision the server is pinned to;
	// ProtocolVersion is the one it was last found speaking.
	Protocol string          `db:"protocol"`
	Tools    json.RawMessage `db:"tools"`
	// ToolsRaw is the cached tools as a JSON array of the server's own
	// bytes for each tool.
	ToolsRaw       json.RawMessage `db:"tools_raw"`
	ToolsExpiresAt *time.Time      `db:"tools_expires_at"`
	HeaderName     string          `db:"header_name"`
	HeaderValueEnc []byte          `db:"header_value_enc"`
	// Sampling and Roots say whether the server may ask for them; RootsList
	// is what roots/list is answered with, a JSON array of Root.
	Sampling  bool            `db:"sampling"`
	Roots     bool            `db:"roots"`
	RootsList json.RawMessage `db:"roots_list"`
	// OAuth: who signs in (OAuthPerson or OAuthShared), the client an
	// admin registered, and whether and how the server asked for a token.
	OAuthMode             string `db:"oauth_mode"`
	OAuthClientID         string `db:"oauth_client_id"`
	OAuthClientSecretEnc  []byte `db:"oauth_client_secret_enc"`
	OAuthRequired         bool   `db:"oauth_required"`
	OAuthResourceMetadata string `db:"oauth_resource_metadata"`
	OAuthScope            string `db:"oauth_scope"`
	// ReplayAnswers lets Rounds give a person's answers again when the
	// server forgot its questions and was asked afresh.
	ReplayAnswers bool `db:"replay_answers"`
	// AgentQuestions says who answers the questions of calls agents start
	// (see RoundAsks): AgentQuestionsAgent, AgentQuestionsOwner, a
	// person's name or "team:NAME".
	AgentQuestions string `db:"agent_questions"`
	// Approvals are the server's approval rules in the servers file's JSON
	// form (nil for none); ApprovalsFromFile says the servers file set
	// them, and sets them again at each start. See Policy.
	Approvals         json.RawMessage `db:"approvals"`
	ApprovalsFromFile bool            `db:"approvals_from_file"`
	CreatedAt         time.Time       `db:"created_at"`
	UpdatedAt         time.Time       `db:"updated_at"`
}

// Local returns the name a local (stdio) server runs under in the MCP
// client's Locals, and whether the server is one ("" and false for a
// server over HTTP). It is asked of the server, and worked out here only.
func (s *Server) Local() (name string, ok bool) {
	if name, ok = mcpclient.LocalName(s.URL); !ok {
		return "", false
	}
	return name, true
}

const serverColumns = `id, name, url, enabled, protocol_version, protocol, tools, tools_expires_at, header_name,
	header_value_enc, sampling, roots, roots_list, created_at, updated_at, tools_raw,
	oauth_mode, oauth_client_id, oauth_client_secret_enc, oauth_required, oauth_resource_metadata, oauth_scope, replay_answers, agent_questions,
	approvals, approvals_from_file`

// Root is a file:// URI a server is told about, with an optional name.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// NewRoot checks a root as the spec asks of clients: a file:// URI of an
// absolute path, with no "." or ".." segments (even percent-encoded) to
// climb out of it, and no query or fragment.
func NewRoot(uri, name string) (Root, error) {
	u, err := url.Parse(uri)
	switch {
	case err != nil || u.Scheme != "file":
		return Root{}, fmt.Errorf("%q is not a file:// URI", uri)
	case u.Host != "" && u.Host != "localhost", u.User != nil, u.Opaque != "":
		return Root{}, fmt.Errorf("%q must be file:///path, on this machine", uri)
	case !strings.HasPrefix(u.Path, "/"):
		return Root{}, fmt.Errorf("%q needs an absolute path", uri)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(uri, "#"):
		return Root{}, fmt.Errorf("%q may not have a query or fragment", uri)
	case strings.ContainsFunc(uri+name, unicode.IsControl):
		return Root{}, fmt.Errorf("%q has control characters", uri)
	case len(name) > 200:
		return Root{}, fmt.Errorf("the name of %q is longer than 200 characters", uri)
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == "." || seg == ".." {
			return Root{}, fmt.Errorf("%q has a %q segment", uri, seg)
		}
	}
	return Root{URI: uri, Name: name}, nil
}

// ParseRoots reads a stored roots list; anything unreadable is no roots.
func ParseRoots(raw json.RawMessage) []Root {
	var roots []Root
	_ = json.Unmarshal(raw, &roots)
	return roots
}

// RootsResult is the ListRootsResult a roots/list question is answered
// with: {"roots": [...]}, from a stored roots list.
func RootsResult(raw json.RawMessage) json.RawMessage {
	roots := ParseRoots(raw)
	if roots == nil {
		roots = []Root{}
	}
	b, _ := json.Marshal(map[string]any{"roots": roots})
	return b
}

// UpsertServer registers a server by name, or points the name at a new URL.
func (s *Store) UpsertServer(ctx context.Context, name, url string) (*Server, error) {
	s.forgetServers() // see ServerToCall
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

// SetServerTools caches a server's tool catalog until expires: tools as
// decoded, raw as the server sent each one (a JSON array).
func (s *Store) SetServerTools(ctx context.Context, id int64, tools, raw json.RawMessage, protocol string, expires time.Time) error {
	s.forgetServers() // see ServerToCall
	_, err := s.pool.Exec(ctx, `
		update servers set tools = $2, tools_raw = $5, protocol_version = $3, tools_expires_at = $4, updated_at = now()
		where id = $1`, id, tools, protocol, expires, raw)
	return err
}

// SetServerProtocol pins a server to a protocol revision, or sets it back
// to mcpclient.ProtocolAuto.
func (s *Store) SetServerProtocol(ctx context.Context, name, protocol string) error {
	s.forgetServers() // see ServerToCall
	if protocol == "" {
		protocol = mcpclient.ProtocolAuto
	}
	_, err := s.pool.Exec(ctx, `update servers set protocol = $2, updated_at = now() where name = $1 and protocol <> $2`, name, protocol)
	return err
}

// SetServerFeatures says whether a server may ask for sampling and for
// roots. Neither is declared to a server it is off for.
func (s *Store) SetServerFeatures(ctx context.Context, name string, sampling, roots bool) error {
	s.forgetServers() // see ServerToCall
	_, err := s.pool.Exec(ctx, `update servers set sampling = $2, roots = $3, updated_at = now()
		where name = $1 and (sampling, roots) is distinct from ($2, $3)`, name, sampling, roots)
	return err
}

// SetServerReplay says whether Rounds may give a person's answers again to
// a server that forgot its questions (see RefuseState).
func (s *Store) SetServerReplay(ctx context.Context, name string, on bool) error {
	s.forgetServers() // see ServerToCall
	return s.execOne(ctx, "server "+name,
		`update servers set replay_answers = $2, updated_at = now() where name = $1`, name, on)
}

// SetServerRoots sets the roots a server's roots/list questions are
// answered with.
func (s *Store) SetServerRoots(ctx context.Context, name string, roots []Root) error {
	s.forgetServers() // see ServerToCall
	if roots == nil {
		roots = []Root{}
	}
	list, err := json.Marshal(roots)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `update servers set roots_list = $2, updated_at = now() where name = $1`, name, list)
	return err
}

// serverFresh is how long an instance starts calls through the API with a
// server as it read it: under load every start read it again, half a
// transaction a round. A server disabled, deleted or changed is seen by
// every instance's API within this time.
const serverFresh = time.Second

type cachedServer struct {
	srv  Server
	read time.Time
}

// ServerToCall returns an enabled server by name, as ServerByName, read at
// most serverFresh ago on this instance.
func (s *Store) ServerToCall(ctx context.Context, name string) (*Server, error) {
	s.serversMu.Lock()
	c, ok := s.servers[name]
	s.serversMu.Unlock()
	if ok && time.Since(c.read) < serverFresh {
		srv := c.srv
		return &srv, nil
	}
	srv, err := s.ServerByName(ctx, name)
	if err != nil {
		return nil, err
	}
	s.serversMu.Lock()
	if s.servers == nil || len(s.servers) > 1000 {
		s.servers = map[string]cachedServer{}
	}
	s.servers[name] = cachedServer{srv: *srv, read: time.Now()}
	s.serversMu.Unlock()
	return srv, nil
}

// forgetServers drops the servers ServerToCall remembers: a change to one
// is seen at once on the instance that made it.
func (s *Store) forgetServers() {
	s.serversMu.Lock()
	s.servers = nil
	s.serversMu.Unlock()
}
