package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Request is one of the three requests that may answer input_required.
type Request struct {
	Method string // MethodCallTool (default), MethodGetPrompt or MethodReadResource
	// Name is the tool or prompt name.
	Name string
	// Arguments is a JSON object, for tools and prompts.
	Arguments json.RawMessage
	// URI is the resource to read.
	URI string
}

// Answers carry a round's answers into the retry.
type Answers struct {
	// InputResponses is the JSON object of responses, by input request key.
	InputResponses json.RawMessage
	// RequestState is the raw JSON string token the server sent, quotes
	// included, or nil when it sent none.
	RequestState []byte
	// Process is the local server's process that sent the state (see
	// Round.Process); only it can open the state.
	Process string
}

// Outcome is what a request came back with: a final result or a round.
type Outcome struct {
	// Result is the server's final result, as sent. Nil for a round.
	Result json.RawMessage
	// Round is set when the server needs input.
	Round *Round
	// Task is set when the server runs the tool call as a task (the
	// io.modelcontextprotocol/tasks extension): the result comes by polling.
	Task *Task
	// Protocol is the revision the request was sent with.
	Protocol string
}

// Round is an input_required result: the questions, exactly as received.
type Round struct {
	// InputRequests is the JSON object of input requests, byte for byte.
	InputRequests json.RawMessage
	// RequestState is the raw JSON string token, byte for byte, or nil.
	RequestState []byte
	// Questions summarizes InputRequests, in the server's order.
	Questions []Question
	// Process names the process of a local server that asked (Process.ID);
	// "" for a server over HTTP.
	Process string
}

// Send sends req, with the answers to the previous round if any, and
// returns the result or the next round. Load shedding (an input_required
// result with no input requests) is retried here, a bounded number of times.
func (c *Client) Send(ctx context.Context, srv Server, req Request, ans *Answers) (*Outcome, error) {
	version, err := c.protocol(ctx, srv)
	if err != nil {
		return nil, err
	}
	if version < ProtocolStateless {
		return c.sendHandshake(ctx, srv, version, req, ans)
	}
	backoff := c.shedBackoff
	for shed := 0; ; shed++ {
		out, err := c.sendStateless(ctx, srv, version, req, ans)
		var se *ServerError
		if errors.As(err, &se) && se.Code == mcp.CodeUnsupportedProtocolVersion && srv.Protocol == "" {
			// The server changed under us: negotiate again, once.
			c.forget(srv)
			if version, err = c.protocol(ctx, srv); err != nil {
				return nil, err
			}
			if version < ProtocolStateless {
				return c.sendHandshake(ctx, srv, version, req, ans)
			}
			out, err = c.sendStateless(ctx, srv, version, req, ans)
		}
		if err != nil {
			return nil, err
		}
		if out.Round == nil || len(out.Round.Questions) > 0 {
			return out, nil
		}
		// Nothing asked: the server is shedding load (or only wants its
		// state back). Retry with what it sent, after a pause.
		if shed >= c.shedRetries {
			return nil, fmt.Errorf("the server stayed busy: it asked for nothing %d times in a row", shed+1)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff *= 2
		ans = &Answers{RequestState: out.Round.RequestState}
		if ans.RequestState == nil {
			ans = nil
		}
	}
}

// sendStateless sends one 2026-07-28 request on a fresh go-sdk connection
// and reads its response without decoding it into SDK types, so that the
// input requests and the request state keep their bytes.
func (c *Client) sendStateless(ctx context.Context, srv Server, version string, req Request, ans *Answers) (*Outcome, error) {
	rid := newRequestID()
	token := ""
	if srv.Progress != nil {
		token = rid // the request's own id names its progress
	}
	params, err := c.params(version, srv, req, ans, token)
	if err != nil {
		return nil, err
	}
	method := req.Method
	if method == "" {
		method = MethodCallTool
	}
	if name, ok := LocalName(srv.URL); ok {
		// The process the request goes to, which a round it answers names.
		if srv.process, err = c.sharedProcess(name); err != nil {
			return nil, err
		}
		if ans != nil && ans.Process != "" && ans.Process != srv.process.ID {
			return nil, &ProcessGoneError{Server: name}
		}
	}
	result, err := c.exchange(ctx, srv, rid, method, params, token)
	if err != nil {
		return nil, err
	}
	out, err := c.outcome(result, srv.Capabilities, method)
	if err != nil {
		return nil, err
	}
	out.Protocol = version
	if out.Round != nil && srv.process != nil {
		out.Round.Process = srv.process.ID
	}
	return out, nil
}

// exchange sends one 2026-07-28 request with id rid and returns its result
// as sent. A notifications/progress for token, when given, goes to
// srv.Progress on the way.
func (c *Client) exchange(ctx context.Context, srv Server, rid, method string, params json.RawMessage, token string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	id, err := jsonrpc.MakeID(rid)
	if err != nil {
		return nil, err
	}
	hc, w := c.wired(srv, false)
	var transport mcp.Transport = &mcp.StreamableClientTransport{
		Endpoint:             srv.URL,
		HTTPClient:           hc,
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	if name, ok := LocalName(srv.URL); ok {
		p := srv.process
		if p == nil {
			if p, err = c.sharedProcess(name); err != nil {
				return nil, err
			}
		}
		transport = p
	}
	conn, err := transport.Connect(ctx)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer conn.Close()
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		if r := w.lastRefusal(); r != nil && ctx.Err() == nil {
			return nil, w.auth.wrap(r)
		}
		return nil, w.auth.wrap(transportError(ctx, err))
	}
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			if r := w.lastRefusal(); r != nil && ctx.Err() == nil {
				return nil, r
			}
			return nil, transportError(ctx, err)
		}
		if n, ok := msg.(*jsonrpc.Request); ok && token != "" && n.Method == "notifications/progress" {
			if p, ok := progressOf(n.Params, token); ok {
				srv.Progress(p)
			}
			continue
		}
		if n, ok := msg.(*jsonrpc.Request); ok && n.Method == "notifications/message" {
			if m, ok := logOf(n.Params, srv.LogLevel); ok && srv.Log != nil {
				srv.Log(m)
			}
			continue
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			// Other notifications and strays are not ours to act on.
			continue
		}
		if resp.Error != nil {
			var we *jsonrpc.Error
			if errors.As(resp.Error, &we) {
				return nil, &ServerError{Code: we.Code, Message: we.Message, Reason: dataReason(we.Data), Data: smallData(we.Data)}
			}
			return nil, &ServerError{Code: jsonrpc.CodeInternalError, Message: resp.Error.Error()}
		}
		return resp.Result, nil
	}
}

// params builds the request's params. The answers are spliced in raw: the
// request state goes back exactly as it came.
func (c *Client) params(version string, srv Server, req Request, ans *Answers, progressToken string) (json.RawMessage, error) {
	type wire struct {
		Meta           map[string]any  `json:"_meta"`
		Name           string          `json:"name,omitempty"`
		URI            string          `json:"uri,omitempty"`
		Arguments      json.RawMessage `json:"arguments,omitempty"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
		RequestState   json.RawMessage `json:"requestState,omitempty"`
	}
	declared := srv.Capabilities.json()
	if req.Method == "" || req.Method == MethodCallTool {
		// A tool call may become a task (tasks.go): the extension is
		// declared on every one.
		declared["extensions"] = map[string]any{ExtensionTasks: map[string]any{}}
	}
	w := wire{
		Meta: map[string]any{
			mcp.MetaKeyProtocolVersion:    version,
			mcp.MetaKeyClientInfo:         c.impl,
			mcp.MetaKeyClientCapabilities: declared,
		},
	}
	if progressToken != "" {
		w.Meta["progressToken"] = progressToken
	}
	if srv.Log != nil && srv.LogLevel != "" {
		// Without it, the server sends no log messages for the request.
		w.Meta[MetaLogLevel] = srv.LogLevel
	}
	switch req.Method {
	case "", MethodCallTool, MethodGetPrompt:
		w.Name = req.Name
		w.Arguments = req.Arguments
		if len(w.Arguments) == 0 && req.Method != MethodGetPrompt {
			w.Arguments = json.RawMessage(`{}`)
		}
	case MethodReadResource:
		w.URI = req.URI
	default:
		return nil, fmt.Errorf("method %q cannot be retried with input", req.Method)
	}
	if ans != nil {
		w.InputResponses = ans.InputResponses
		if ans.RequestState != nil {
			if !isJSONString(ans.RequestState) {
				return nil, errors.New("stored request state is not a JSON string")
			}
			w.RequestState = ans.RequestState
		}
	}
	return MarshalRaw(w)
}

// outcome reads a result. A result without resultType is complete.
func (c *Client) outcome(result json.RawMessage, caps Capabilities, method string) (*Outcome, error) {
	var env struct {
		ResultType    *string         `json:"resultType"`
		InputRequests json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage `json:"requestState"`
	}
	if err := json.Unmarshal(result, &env); err != nil {
		return nil, fmt.Errorf("the server sent a result that is not a JSON object: %w", err)
	}
	if env.ResultType == nil || *env.ResultType == "complete" {
		// A result is kept as sent (json, not jsonb), NULs and all; only
		// bytes that are not UTF-8 cannot be.
		if err := checkStorable(result, "its result", false); err != nil {
			return nil, err
		}
		return &Outcome{Result: result}, nil
	}
	if *env.ResultType == resultTask {
		if method != MethodCallTool {
			// The extension makes tasks of tool calls only.
			return nil, fmt.Errorf("the server answered %s with a task, which only a tool call may be", method)
		}
		t, err := c.task(result, caps)
		if err != nil {
			return nil, err
		}
		return &Outcome{Task: t}, nil
	}
	if *env.ResultType != "input_required" {
		return nil, fmt.Errorf("the server sent an unknown resultType %q", *env.ResultType)
	}
	round := &Round{}
	if len(env.RequestState) > 0 && !bytes.Equal(env.RequestState, []byte("null")) {
		if !isJSONString(env.RequestState) {
			return nil, errors.New("the server sent a requestState that is not a string")
		}
		if len(env.RequestState) > c.maxState {
			return nil, fmt.Errorf("the server sent a requestState of %d bytes; this client keeps at most %d", len(env.RequestState), c.maxState)
		}
		round.RequestState = bytes.Clone(env.RequestState)
	}
	if len(env.InputRequests) > 0 && !bytes.Equal(env.InputRequests, []byte("null")) {
		// Questions are read back in SQL (the inbox's messages), where a NUL
		// cannot be: they are refused with it.
		if err := checkStorable(env.InputRequests, "its questions", true); err != nil {
			return nil, err
		}
		qs, err := ParseQuestions(env.InputRequests)
		if err != nil {
			return nil, err
		}
		if err := checkRound(env.InputRequests, qs); err != nil {
			return nil, err
		}
		if err := caps.check(qs); err != nil {
			return nil, err
		}
		round.InputRequests = bytes.Clone(env.InputRequests)
		round.Questions = qs
	}
	if round.InputRequests == nil {
		round.InputRequests = json.RawMessage(`{}`)
	}
	return &Outcome{Round: round}, nil
}

func isJSONString(b []byte) bool {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return false
	}
	var s string
	return json.Unmarshal(b, &s) == nil
}

// MarshalRaw is json.Marshal without HTML escaping, which would otherwise
// rewrite '<', '>' and '&' in what a server sent, or inside spliced raw
// values.
func MarshalRaw(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// progressOf reads a notifications/progress for token: a server's words
// are kept as text, bounded, and a progress that is not a number is none.
func progressOf(params json.RawMessage, token string) (Progress, bool) {
	var p struct {
		Token    json.RawMessage `json:"progressToken"`
		Progress *float64        `json:"progress"`
		Total    *float64        `json:"total"`
		Message  string          `json:"message"`
	}
	var want string
	if json.Unmarshal(params, &p) != nil || p.Progress == nil || json.Unmarshal(p.Token, &want) != nil || want != token {
		return Progress{}, false
	}
	out := Progress{Progress: *p.Progress, Message: boundedText(p.Message)}
	if p.Total != nil && *p.Total > 0 {
		out.Total = p.Total
	}
	return out, true
}
