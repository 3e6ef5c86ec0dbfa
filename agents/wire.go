package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// MCP's own error codes (2026-07-28).
const (
	CodeHeaderMismatch             = -32020
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// SupportedVersions are the revisions the door answers, newest first.
var SupportedVersions = []string{mcpclient.ProtocolStateless}

// Meta is the per-request _meta of a 2026-07-28 request.
type Meta struct {
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
	ClientInfo         *ClientInfo     `json:"io.modelcontextprotocol/clientInfo"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	ProgressToken      json.RawMessage `json:"progressToken"`
	// LogLevel is the least severe of the server's log messages the agent
	// hears during this request; empty, it hears none. A session's is the
	// one it set with logging/setLevel.
	LogLevel string `json:"io.modelcontextprotocol/logLevel"`
}

// ClientInfo is what an agent says it is.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// RPCError is a JSON-RPC error answered with an HTTP status.
type RPCError struct {
	Status  int
	Code    int64
	Message string
	Data    any
}

func (e *RPCError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// invalidParams is a -32602 error, answered 400.
func invalidParams(msg string) *RPCError {
	return &RPCError{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// readMeta reads the request's _meta and checks its protocol version
// against the MCP-Protocol-Version header.
func (q *Request) readMeta() error {
	var p struct {
		Meta *Meta `json:"_meta"`
	}
	if len(q.Params) > 0 {
		if err := json.Unmarshal(q.Params, &p); err != nil {
			return invalidParams("The params must be a JSON object.")
		}
	}
	if p.Meta != nil {
		q.Meta = *p.Meta
	}
	header := q.R.Header.Get("MCP-Protocol-Version")
	v := q.Meta.ProtocolVersion
	if v == "" {
		return invalidParams(`_meta must name "io.modelcontextprotocol/protocolVersion".`)
	}
	if len(q.Meta.ClientCapabilities) == 0 || string(q.Meta.ClientCapabilities) == "null" {
		return invalidParams(`_meta must name "io.modelcontextprotocol/clientCapabilities".`)
	}
	if l := q.Meta.LogLevel; l != "" && !slices.Contains(mcpclient.LogLevels, l) {
		return invalidParams(`_meta's "` + mcpclient.MetaLogLevel + `" must be one of ` + strings.Join(mcpclient.LogLevels, ", ") + ".")
	}
	if header != "" && header != v {
		return &RPCError{Status: http.StatusBadRequest, Code: CodeHeaderMismatch,
			Message: "The MCP-Protocol-Version header does not match the request's protocol version."}
	}
	if !slices.Contains(SupportedVersions, v) {
		return &RPCError{Status: http.StatusBadRequest, Code: CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version.",
			Data: map[string]any{"supported": SupportedVersions, "requested": v}}
	}
	return nil
}

// response is a JSON-RPC response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *wireError      `json:"error,omitempty"`
}

type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Result answers the request with result, as it is.
func (q *Request) Result(result json.RawMessage) error {
	return q.write(http.StatusOK, response{JSONRPC: "2.0", ID: q.ID, Result: result})
}

// ResultOf answers the request with v encoded as JSON.
func (q *Request) ResultOf(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return q.Result(b)
}

// Error answers the request with a JSON-RPC error.
func (q *Request) Error(status int, code int64, msg string, data any) {
	_ = q.write(status, response{JSONRPC: "2.0", ID: q.ID, Error: &wireError{Code: code, Message: msg, Data: data}})
}

// fail answers the request with err: an RPCError as it is, anything else
// in words an agent may read.
func (q *Request) fail(err error) {
	var re *RPCError
	switch {
	case errors.As(err, &re):
		q.Error(re.Status, re.Code, re.Message, re.Data)
	case isNotFound(err):
		q.Error(http.StatusOK, jsonrpc.CodeInvalidParams, "Not found.", nil)
	case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrConflict):
		msg := "The request cannot be done."
		var se *store.Error
		if errors.As(err, &se) && se.Message != "" {
			msg = se.Message
		}
		q.Error(http.StatusOK, jsonrpc.CodeInvalidParams, msg, nil)
	default:
		if q.Ctx.Err() == nil {
			q.d.o.Log.ErrorContext(q.Ctx, "answering an agent", "method", q.Method, "server", q.Server.Name, "err", err)
		}
		q.Error(http.StatusOK, jsonrpc.CodeInternalError, "Something went wrong in Rounds. Please try again.", nil)
	}
}

// write sends a response: as JSON, or as the last event of the stream
// already begun.
func (q *Request) write(status int, r response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if q.stream != nil {
		return q.stream.event(b)
	}
	q.W.Header().Set("Content-Type", "application/json")
	q.W.WriteHeader(status)
	_, err = q.W.Write(b)
	return err
}

// writeError answers a request that did not get as far as a Request.
func writeError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string, data any) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(response{JSONRPC: "2.0", ID: id, Error: &wireError{Code: code, Message: msg, Data: data}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// stream is a response sent as server-sent events.
type stream struct {
	mu sync.Mutex
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startStream turns the response into a stream of events.
func (q *Request) startStream() *stream {
	if q.stream != nil {
		return q.stream
	}
	h := q.W.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	q.W.WriteHeader(http.StatusOK)
	q.stream = &stream{w: q.W, rc: http.NewResponseController(q.W)}
	_ = q.stream.rc.Flush()
	return q.stream
}

// event sends one JSON-RPC message.
func (s *stream) event(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", msg); err != nil {
		return err
	}
	return s.rc.Flush()
}

// comment sends an SSE comment, which clients ignore: proxies see the
// stream is alive.
func (s *stream) comment() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprint(s.w, ": waiting\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}

// isNotFound reports a store.ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
