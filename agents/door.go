// Package agents is Rounds' MCP front door: every registered server is
// served at /mcp/{server} to agents (MCP clients), which reach it through
// Rounds. What the server behind sends passes byte for byte; its questions
// go to whoever is to answer them (the agent itself, or a person in
// Rounds), and its requestState never leaves Rounds.
//
// The endpoint is a hand-written Streamable HTTP JSON-RPC endpoint: a call,
// a round and the state an agent is given go on on any instance, since all
// of it is in Postgres. This file is the door itself (who asks, which
// server, which method); lists.go passes the lists through, call.go starts
// and answers calls, wait.go waits for them, state.go seals the state
// given to agents.
package agents

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-rounds/rounds/catalog"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/store"
)

// DefaultWait is how long a request is held open for a person in Rounds to
// answer (AGENT_WAIT), and DefaultKeepalive how often something is sent on
// a held stream so proxies keep it.
const (
	DefaultWait      = 10 * time.Minute
	DefaultKeepalive = 20 * time.Second
)

// maxBody caps an agent's request body.
const maxBody = 2 << 20

// OAuthGrant is what an OAuth access token grants: whose it is, the client
// it was given to, and the servers (names) it may reach.
type OAuthGrant struct {
	User       *store.User
	ClientID   string
	ClientName string
	Servers    []string
}

// Options are the door's collaborators and settings.
type Options struct {
	Store    *store.Store
	Engine   *engine.Engine
	Catalog  *catalog.Service
	Notifier *store.Notifier
	Log      *slog.Logger
	// PublicURL is where agents reach Rounds, without a trailing slash.
	PublicURL string
	// InstanceID names this instance in the audit log.
	InstanceID string
	// StateKey seals the requestState given to agents (32 bytes).
	StateKey []byte
	// Wait is AGENT_WAIT; Keepalive how often a held stream hears from us.
	Wait      time.Duration
	Keepalive time.Duration
	// VerifyOAuth checks an OAuth access token; nil when Rounds grants
	// none. It returns store.ErrNotFound for a token that is not valid.
	VerifyOAuth func(ctx context.Context, token string) (*OAuthGrant, error)
}

type clientIPKey struct{}

// WithClientIP gives the door the address a request comes from, as the
// pages take it (trusted proxies), for the audit log.
func WithClientIP(r *http.Request, ip string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), clientIPKey{}, ip))
}

// Method answers one JSON-RPC request of an agent; other files (and
// helpers extending the door) register theirs in Door.methods.
type Method func(q *Request) error

// Door serves /mcp/{server}.
type Door struct {
	o       Options
	methods map[string]Method
	// notes handles the agents' notifications, by method.
	notes map[string]func(q *Request)
	// closing is closed when Rounds shuts down: held requests answer at
	// once, and their calls go on.
	closing   chan struct{}
	closeOnce sync.Once
	held      sync.WaitGroup
	// slots counts the requests held for AGENT_WAIT (see maxHeld).
	slots chan struct{}
}

// New returns a Door.
func New(o Options) *Door {
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Keepalive <= 0 {
		o.Keepalive = DefaultKeepalive
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	d := &Door{o: o, closing: make(chan struct{}), slots: make(chan struct{}, maxHeld)}
	d.methods = map[string]Method{
		"server/discover":          d.discover,
		"ping":                     d.ping, // in 2025-11-25 sessions only
		"tools/list":               d.toolsList,
		"prompts/list":             d.promptsList,
		"resources/list":           d.resourcesList,
		"resources/templates/list": d.templatesList,
		"completion/complete":      d.complete,
		"tools/call":               d.call,
		"prompts/get":              d.call,
		"resources/read":           d.call,
		"tasks/get":                d.tasksGet,
		"tasks/update":             d.tasksUpdate,
		"tasks/cancel":             d.tasksCancel,
	}
	d.notes = map[string]func(q *Request){
		"notifications/cancelled": d.cancelled,
	}
	return d
}

// Handle registers (or replaces) the answer to a method.
func (d *Door) Handle(method string, m Method) { d.methods[method] = m }

// HandleNote registers (or replaces) what an agent's notification does;
// the agent is answered 202 whatever it does.
func (d *Door) HandleNote(method string, note func(q *Request)) { d.notes[method] = note }

// Close ends the held requests without cancelling their calls: Rounds is
// shutting down, and the calls go on in Rounds. It returns once they have
// answered, or ctx is done.
func (d *Door) Close(ctx context.Context) {
	d.closeOnce.Do(func() { close(d.closing) })
	done := make(chan struct{})
	go func() { d.held.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// shuttingDown reports whether Close was called.
func (d *Door) shuttingDown() bool {
	select {
	case <-d.closing:
		return true
	default:
		return false
	}
}

// Request is one JSON-RPC message of an agent, with who sent it and to
// which server.
type Request struct {
	d   *Door
	W   http.ResponseWriter
	R   *http.Request
	Ctx context.Context
	// ID is the request's id as sent; nil for a notification.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Meta   Meta
	Who    *Principal
	Server *store.Server
	// stream is set once the answer went over server-sent events.
	stream *stream
	// session is the 2025-11-25 session the request belongs to; nil for
	// a 2026-07-28 request (session.go).
	session *store.AgentSession
}

// wireRequest is a JSON-RPC message as an agent posts it.
type wireRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	// Result or Error: a response of a session's agent (session.go).
	Result json.RawMessage `json:"result"`
	Error  *wireError      `json:"error"`
}

// ServeHTTP serves POST /mcp/{server}.
func (d *Door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, err := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/mcp/"))
	if err != nil || name == "" || strings.Contains(name, "/") {
		writeError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "There is no MCP server here.", nil)
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodDelete {
		w.Header().Set("Allow", "POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "Send each JSON-RPC message as a POST.", nil)
		return
	}
	if !d.allowedOrigin(r) {
		forbidden(w)
		return
	}
	ctx := r.Context()
	who, err := d.authenticate(ctx, r, name)
	if err != nil {
		d.unauthorized(w, name, err)
		return
	}
	srv, err := d.o.Store.ServerToCall(ctx, name)
	if err != nil {
		status, code, msg := http.StatusNotFound, int64(jsonrpc.CodeInvalidRequest), "Rounds has no server "+name+"."
		if !isNotFound(err) {
			status, code, msg = http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "Rounds cannot answer just now. Please try again."
			d.o.Log.ErrorContext(ctx, "reading a server for an agent", "server", name, "err", err)
		}
		writeError(w, status, nil, code, msg, nil)
		return
	}
	if r.Method == http.MethodDelete {
		d.endSession(w, r, who, srv)
		return
	}
	var msg wireRequest
	err = json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&msg)
	if err == nil && msg.JSONRPC == "2.0" && ((msg.Method == "initialize" && !statelessMeta(msg.Params)) || r.Header.Get(SessionHeader) != "") {
		d.inSession(w, r, who, srv, msg)
		return
	}
	if err != nil || msg.JSONRPC != "2.0" || msg.Method == "" {
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, "The body must be one JSON-RPC request or notification.", nil)
		return
	}
	q := &Request{d: d, W: w, R: r, Ctx: ctx, ID: msg.ID, Method: msg.Method, Params: msg.Params, Who: who, Server: srv}
	if len(q.ID) == 0 || string(q.ID) == "null" {
		q.ID = nil
		_ = q.readMeta() // what it says of the agent, if anything
		if note, ok := d.notes[msg.Method]; ok {
			note(q)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if err := q.readMeta(); err != nil {
		q.fail(err)
		return
	}
	if err := cmp.Or(q.checkHeaders(), q.checkParamHeaders()); err != nil {
		q.fail(err)
		return
	}
	m, ok := d.methods[msg.Method]
	if !ok || removedMethods[msg.Method] {
		q.Error(http.StatusNotFound, jsonrpc.CodeMethodNotFound, "Method not found: "+msg.Method+".", nil)
		return
	}
	d.held.Add(1)
	defer d.held.Done()
	if err := m(q); err != nil {
		q.fail(err)
	}
}

// ping answers an agent's ping.
func (d *Door) ping(q *Request) error { return q.Result(q.completed(json.RawMessage(`{}`))) }
