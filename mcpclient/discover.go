package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Discovery is what a server says about itself.
type Discovery struct {
	Protocol     string
	ServerName   string
	Version      string
	Instructions string
	Capabilities json.RawMessage
}

// connect opens a go-sdk session: server/discover first, falling back to the
// initialize handshake for older servers. Handshake-era sessions declare no
// capabilities, since a question asked mid-call could not be answered.
func (c *Client) connect(ctx context.Context, srv Server) (*mcp.ClientSession, error) {
	caps := srv.Capabilities.sdk()
	opts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: caps}
	if srv.Protocol != "" && srv.Protocol < ProtocolStateless {
		if srv.Held == nil {
			// Nobody to answer a question asked mid-call: declare nothing.
			opts.Capabilities = &mcp.ClientCapabilities{}
		} else {
			held := srv.Held
			// Only elicitation is answered mid-call; sampling and roots stay
			// undeclared on handshake sessions.
			opts.Capabilities = (Capabilities{FormElicitation: srv.Capabilities.FormElicitation, URLElicitation: srv.Capabilities.URLElicitation}).sdk()
			opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				params, err := json.Marshal(req.Params)
				if err != nil {
					return nil, err
				}
				kind := KindForm
				if req.Params.Mode == "url" {
					kind = KindURL
				}
				raw, err := held.Ask(ctx, Question{Key: "elicitation", Method: "elicitation/create", Kind: kind, Params: params})
				if err != nil {
					return nil, err
				}
				var res mcp.ElicitResult
				if err := json.Unmarshal(raw, &res); err != nil {
					return nil, err
				}
				return &res, nil
			}
			if held.Completed != nil {
				opts.ElicitationCompleteHandler = func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
					held.Completed(req.Params.ElicitationID)
				}
			}
		}
	}
	impl := c.impl
	client := mcp.NewClient(&impl, opts)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   srv.URL,
		HTTPClient: c.httpFor(srv),
		// A handshake-era server may send its questions on the standalone
		// stream; a stateless one has none.
		DisableStandaloneSSE: srv.Held == nil,
		MaxRetries:           -1,
	}
	connectCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cs, err := client.Connect(connectCtx, transport, &mcp.ClientSessionOptions{ProtocolVersion: srv.Protocol})
	if err != nil {
		return nil, wrapSDK(ctx, err)
	}
	return cs, nil
}

// Discover asks the server who it is and which revision it speaks, and
// remembers the revision for later requests.
func (c *Client) Discover(ctx context.Context, srv Server) (*Discovery, error) {
	cs, err := c.connect(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res := cs.InitializeResult()
	d := &Discovery{Protocol: res.ProtocolVersion, Instructions: res.Instructions}
	if res.ServerInfo != nil {
		d.ServerName, d.Version = res.ServerInfo.Name, res.ServerInfo.Version
	}
	if res.Capabilities != nil {
		d.Capabilities, _ = json.Marshal(res.Capabilities)
	}
	c.remember(srv, d.Protocol)
	return d, nil
}

// Tools is a server's tool catalog.
type Tools struct {
	Tools []*mcp.Tool
	// TTL is the server's cache hint (ttlMs); zero when it gave none.
	TTL time.Duration
	// Protocol is the revision the server speaks.
	Protocol string
}

// ListTools lists every tool, following pages.
func (c *Client) ListTools(ctx context.Context, srv Server) (*Tools, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cs, err := c.connect(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	out := &Tools{Protocol: cs.InitializeResult().ProtocolVersion}
	c.remember(srv, out.Protocol)
	params := &mcp.ListToolsParams{}
	for page := 0; page < 100; page++ {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, wrapSDK(ctx, err)
		}
		out.Tools = append(out.Tools, res.Tools...)
		if ttl := time.Duration(res.TTLMs) * time.Millisecond; page == 0 || ttl < out.TTL {
			out.TTL = ttl
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return out, nil
}

// protocol returns the revision to speak with srv, discovering it if needed.
func (c *Client) protocol(ctx context.Context, srv Server) (string, error) {
	if srv.Protocol != "" {
		return srv.Protocol, nil
	}
	c.mu.Lock()
	d, ok := c.discovery[srv.URL]
	c.mu.Unlock()
	if ok && time.Now().Before(d.until) {
		return d.version, nil
	}
	disc, err := c.Discover(ctx, srv)
	if err != nil {
		return "", err
	}
	return disc.Protocol, nil
}

func (c *Client) remember(srv Server, version string) {
	if srv.Protocol != "" {
		return
	}
	c.mu.Lock()
	c.discovery[srv.URL] = discovered{version: version, until: time.Now().Add(c.ttl)}
	c.mu.Unlock()
}

func (c *Client) forget(srv Server) {
	c.mu.Lock()
	delete(c.discovery, srv.URL)
	c.mu.Unlock()
}

// sendHandshake sends a request to a handshake-era server over a session of
// its own. Such a server cannot answer input_required, so the result is
// always final.
func (c *Client) sendHandshake(ctx context.Context, srv Server, version string, req Request, ans *Answers) (*Outcome, error) {
	if ans != nil {
		return nil, errors.New("a handshake-era server cannot take answers in a retry")
	}
	srv.Protocol = version
	cs, err := c.connect(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	if srv.Held != nil && srv.Held.Sending != nil {
		if err := srv.Held.Sending(ctx); err != nil {
			return nil, err
		}
	}
	var res any
	switch req.Method {
	case "", MethodCallTool:
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Name, Arguments: req.Arguments})
	case MethodGetPrompt:
		var args map[string]string
		if len(req.Arguments) > 0 {
			if err := json.Unmarshal(req.Arguments, &args); err != nil {
				return nil, errors.New("prompt arguments must be an object of strings")
			}
		}
		res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: req.Name, Arguments: args})
	case MethodReadResource:
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.URI})
	default:
		return nil, errors.New("unsupported method " + req.Method)
	}
	if err != nil {
		return nil, wrapSDK(ctx, err)
	}
	raw, err := marshalRaw(res)
	if err != nil {
		return nil, err
	}
	return &Outcome{Result: raw, Protocol: version}, nil
}

// wrapSDK turns a go-sdk error into ours: a JSON-RPC error from the server,
// or a failure to reach it.
func wrapSDK(ctx context.Context, err error) error {
	var we *mcpWireError
	if errors.As(err, &we) && we.Code != codeRejectedByTransport {
		return &ServerError{Code: we.Code, Message: we.Message}
	}
	return &UnreachableError{Err: ctxDone(ctx, err)}
}

type mcpWireError = jsonrpc.Error

// codeRejectedByTransport is the go-sdk's code for a request that never
// reached the server.
const codeRejectedByTransport = -32005
