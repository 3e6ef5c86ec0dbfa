package agents

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// A 2025-11-25 agent (or one of the revisions before it) begins with
// initialize and is given an Mcp-Session-Id, which every later message
// carries. The session is in Postgres, so any instance serves it, and a
// DELETE on one ends it on all. Its tools/call is answered as server-sent
// events when the agent is asked questions: one JSON-RPC request per
// question of the round, whose responses the agent posts back, perhaps to
// another instance (session_ask.go).

// SessionHeader carries a session's id.
const SessionHeader = "Mcp-Session-Id"

// sessionRevisions are the revisions a session may speak: those of
// mcpclient.Revisions older than 2026-07-28, newest first.
func sessionRevisions() []string {
	var out []string
	for _, v := range mcpclient.Revisions {
		if v < mcpclient.ProtocolStateless {
			out = append(out, v)
		}
	}
	return out
}

// negotiate answers the revision an agent asked for at initialize: its own
// when Rounds speaks it, else the newest Rounds speaks in a session.
func negotiate(requested string) string {
	if slices.Contains(sessionRevisions(), requested) {
		return requested
	}
	return mcpclient.ProtocolHandshake
}

// inSession serves a message of the handshake era: initialize, or any
// message carrying an Mcp-Session-Id.
func (d *Door) inSession(w http.ResponseWriter, r *http.Request, who *Principal, srv *store.Server, msg wireRequest) {
	q := &Request{d: d, W: w, R: r, Ctx: r.Context(), ID: msg.ID, Method: msg.Method, Params: msg.Params, Who: who, Server: srv}
	if len(q.ID) == 0 || string(q.ID) == "null" {
		q.ID = nil
	}
	if msg.Method == "initialize" {
		if r.Header.Get(SessionHeader) != "" {
			q.Error(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "initialize begins a session: send it without "+SessionHeader+".", nil)
			return
		}
		if err := d.initialize(q); err != nil {
			q.fail(err)
		}
		return
	}
	as, ok := d.session(q)
	if !ok {
		return
	}
	q.session = as
	switch {
	case msg.Method == "" && q.ID != nil && (msg.Result != nil || msg.Error != nil):
		d.answered(q, msg.Result, msg.Error)
	case msg.Method == "":
		q.Error(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "The body must be one JSON-RPC message.", nil)
	case q.ID == nil:
		if msg.Method == "notifications/cancelled" {
			d.sessionCancelled(q)
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		d.sessionRequest(q)
	}
}

// session finds the session the request names, of this server and this
// user; when there is none it answers 404, as the spec says of a session
// that ended, so the agent begins another.
func (d *Door) session(q *Request) (*store.AgentSession, bool) {
	id := q.R.Header.Get(SessionHeader)
	as, err := d.o.Store.AgentSessionByID(q.Ctx, sessionHash(id))
	if err == nil && (as.Server != q.Server.Name || as.UserID != q.Who.User.ID) {
		err = store.ErrNotFound
	}
	switch {
	case isNotFound(err):
		q.Error(http.StatusNotFound, jsonrpc.CodeInvalidRequest, "This session has ended, or never began: send initialize again.", nil)
		return nil, false
	case err != nil:
		q.fail(err)
		return nil, false
	}
	return as, true
}

// sessionRequest answers a request of a session as the door answers the
// same request of a 2026-07-28 agent, with what the session declared in
// place of the per-request _meta.
func (d *Door) sessionRequest(q *Request) {
	v := q.session.Agent.Protocol
	if h := q.R.Header.Get("MCP-Protocol-Version"); h != "" && h != v {
		q.Error(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "This session speaks "+v+": the MCP-Protocol-Version header says "+h+".", nil)
		return
	}
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if len(q.Params) > 0 && json.Unmarshal(q.Params, &p) != nil {
		q.fail(invalidParams("The params must be a JSON object."))
		return
	}
	a := q.session.Agent
	q.Meta = Meta{ProtocolVersion: v, ClientInfo: &ClientInfo{Name: a.Name, Version: a.Version}, ProgressToken: p.Meta.ProgressToken,
		LogLevel: a.LogLevel}
	m, ok := d.methods[q.Method]
	if only, found := d.sessionMethods()[q.Method]; found {
		m, ok = only, true
	}
	if !ok || q.Method == "server/discover" {
		q.Error(http.StatusOK, jsonrpc.CodeMethodNotFound, "Method not found: "+q.Method+".", nil)
		return
	}
	d.held.Add(1)
	defer d.held.Done()
	if err := m(q); err != nil {
		q.fail(err)
	}
}

// initialize begins a session: the revision is agreed, the agent's
// clientInfo and capabilities are kept with the session, and the answer
// is Rounds as the server behind it (its tools, prompts and resources),
// with the session's id in its header.
func (d *Door) initialize(q *Request) error {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      *ClientInfo     `json:"clientInfo"`
	}
	if len(q.Params) == 0 || json.Unmarshal(q.Params, &p) != nil {
		return invalidParams("initialize takes params: protocolVersion, capabilities and clientInfo.")
	}
	q.Meta = Meta{ProtocolVersion: negotiate(p.ProtocolVersion), ClientInfo: p.ClientInfo, ClientCapabilities: p.Capabilities}
	f, err := d.face(q)
	if err != nil {
		return err
	}
	id, hash, err := newSessionID()
	if err != nil {
		return err
	}
	agent := q.agent()
	agent.Session, agent.RequestID = hash, ""
	err = d.o.Store.CreateAgentSession(q.Ctx, store.AgentSession{ID: hash, Server: q.Server.Name, UserID: q.Who.User.ID, Agent: *agent})
	if err != nil {
		return err
	}
	out := map[string]any{"protocolVersion": q.Meta.ProtocolVersion, "capabilities": f.Capabilities, "serverInfo": f.Info}
	if f.Instructions != "" {
		out["instructions"] = f.Instructions
	}
	q.W.Header().Set(SessionHeader, id)
	return q.ResultOf(out)
}

// endSession ends the session the DELETE names; the calls it started go
// on in Rounds.
func (d *Door) endSession(w http.ResponseWriter, r *http.Request, who *Principal, srv *store.Server) {
	q := &Request{d: d, W: w, R: r, Ctx: r.Context(), Method: "DELETE", Who: who, Server: srv}
	if r.Header.Get(SessionHeader) == "" {
		q.Error(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "DELETE ends a session: name it in "+SessionHeader+".", nil)
		return
	}
	as, ok := d.session(q)
	if !ok {
		return
	}
	err := d.o.Store.EndAgentSession(context.WithoutCancel(q.Ctx), as.ID, who.User.ID)
	if isNotFound(err) {
		q.Error(http.StatusNotFound, jsonrpc.CodeInvalidRequest, "This session has already ended.", nil)
		return
	}
	if err != nil {
		q.fail(err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
