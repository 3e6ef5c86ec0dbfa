package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
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
// initialize handshake for older servers. A handshake-era session declares
// only what can be answered while the call is open: elicitation and sampling
// through srv.Held, roots from srv.Roots.
func (c *Client) connect(ctx context.Context, srv Server) (*mcp.ClientSession, *wire, error) {
	hc, w := c.wired(srv, srv.Held != nil)
	opts, roots := clientOptions(srv, w)
	impl := c.impl
	client := mcp.NewClient(&impl, opts)
	// The go-sdk answers roots/list from these, without asking anyone.
	client.AddRoots(roots...)
	if name, ok := LocalName(srv.URL); ok {
		return c.connectLocal(ctx, client, name, srv, w)
	}
	return c.connectHTTP(ctx, client, hc, srv, w)
}

// clientOptions are what the session declares, and the roots it gives. A
// handshake-era session without anybody to answer a question asked mid-call
// declares nothing; one held open declares what srv.Held answers.
func clientOptions(srv Server, w *wire) (*mcp.ClientOptions, []*mcp.Root) {
	opts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: srv.Capabilities.sdk(),
		LoggingMessageHandler: logHandler(srv)}
	if srv.Protocol == "" || srv.Protocol >= ProtocolStateless {
		return opts, nil
	}
	held := srv.Held
	if held == nil {
		opts.Capabilities = &mcp.ClientCapabilities{}
		return opts, nil
	}
	opts.ElicitationHandler = askElicitation(held, w)
	if srv.Progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if t, _ := req.Params.ProgressToken.(string); t == handshakeProgressToken {
				srv.Progress(handshakeProgress(req.Params))
			}
		}
	}
	if srv.Capabilities.Sampling {
		opts.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			id, _ := req.Params.Meta[wireKey].(string)
			return askSampling(ctx, held, w, id, req.Params)
		}
	}
	var roots []*mcp.Root
	if srv.Capabilities.Roots {
		for _, r := range srv.Roots {
			roots = append(roots, &mcp.Root{URI: r.URI, Name: r.Name})
		}
	}
	if held.Completed != nil {
		opts.ElicitationCompleteHandler = func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			held.Completed(req.Params.ElicitationID)
		}
	}
	return opts, roots
}

// handshakeProgressToken names a held session's one tool call's progress:
// the session is the call's own.
const handshakeProgressToken = "rounds-call"

// handshakeProgress reads a handshake-era server's progress as progressOf
// reads a 2026-07-28 server's: its words bounded, a total only when known.
func handshakeProgress(p *mcp.ProgressNotificationParams) Progress {
	out := Progress{Progress: p.Progress, Message: boundedText(p.Message)}
	if p.Total > 0 {
		total := p.Total
		out.Total = &total
	}
	return out
}

// askElicitation is the handler of a handshake-era server's elicitation
// request: it asks a person through held and gives the server the answer.
func askElicitation(held *Held, w *wire) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		// The params as the server sent them, schema and key order
		// included (the SDK saw them without the schema).
		id, _ := req.Params.Meta[wireKey].(string)
		params := w.params(id)
		if params == nil {
			var err error
			if params, err = json.Marshal(req.Params); err != nil {
				return nil, err
			}
		}
		if err := checkHeld("elicitation", params); err != nil {
			// Refused to the server, and the call ends with it.
			w.refuse(err)
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
		if id != "" {
			// Sent as given, not as the SDK would re-encode it.
			w.answer(id, raw)
		}
		return &res, nil
	}
}

// connectLocal connects to the local server name, over its process's
// standard input and output; the process goes if the connection fails.
func (c *Client) connectLocal(ctx context.Context, client *mcp.Client, name string, srv Server, w *wire) (*mcp.ClientSession, *wire, error) {
	transport, err := c.localTransport(ctx, name, srv.Protocol, w, srv.tap)
	if err != nil {
		return nil, nil, err
	}
	connectCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cs, err := client.Connect(connectCtx, transport, &mcp.ClientSessionOptions{ProtocolVersion: srv.Protocol})
	if err != nil {
		if w.local != nil {
			_ = w.local.Close()
		}
		return nil, nil, w.wrap(ctx, err)
	}
	return cs, w, nil
}

// connectHTTP connects to the server at srv.URL over streamable HTTP.
func (c *Client) connectHTTP(ctx context.Context, client *mcp.Client, hc *http.Client, srv Server, w *wire) (*mcp.ClientSession, *wire, error) {
	st := &mcp.StreamableClientTransport{
		Endpoint:   srv.URL,
		HTTPClient: hc,
		// A handshake-era server may send its questions on the standalone
		// stream; a stateless one has none.
		DisableStandaloneSSE: srv.Held == nil,
		MaxRetries:           -1,
	}
	if srv.Held != nil {
		// A held session's server may close an SSE stream gracefully
		// (after an event id and a retry field) and expect us back: the
		// go-sdk then reconnects with GET and Last-Event-ID.
		st.MaxRetries = 0 // its default, five tries
	}
	connectCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cs, err := client.Connect(connectCtx, st, &mcp.ClientSessionOptions{ProtocolVersion: srv.Protocol})
	if err != nil {
		return nil, nil, w.auth.wrap(w.wrap(ctx, err))
	}
	return cs, w, nil
}

// Discover asks the server who it is and which revision it speaks, and
// remembers the revision for later requests.
func (c *Client) Discover(ctx context.Context, srv Server) (*Discovery, error) {
	cs, _, err := c.connect(ctx, srv)
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
	// Raw holds each tool, by name, exactly as the server sent it.
	Raw map[string]json.RawMessage
}

// ListTools lists every tool, following pages.
func (c *Client) ListTools(ctx context.Context, srv Server) (*Tools, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	srv.tap = &tap{}
	cs, w, err := c.connect(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	out := &Tools{Protocol: cs.InitializeResult().ProtocolVersion}
	defer func() { out.Raw = srv.tap.tools() }()
	c.remember(srv, out.Protocol)
	first := true
	out.Tools, err = pages(func(cursor string) ([]*mcp.Tool, string, error) {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		// The catalog is cached as long as its shortest-lived page allows.
		if ttl := time.Duration(res.TTLMs) * time.Millisecond; first || ttl < out.TTL {
			out.TTL = ttl
		}
		first = false
		return res.Tools, res.NextCursor, nil
	})
	if err != nil {
		return nil, w.wrap(ctx, err)
	}
	return out, nil
}

// Catalog is what a server offers besides tools: prompts, resources and
// resource templates. A kind the server does not declare is empty.
type Catalog struct {
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
	// RawPrompts, RawResources and RawTemplates are the same lists as the
	// server sent each item, in its order.
	RawPrompts, RawResources, RawTemplates []json.RawMessage
}

// ListCatalog lists a server's prompts, resources and resource templates,
// following pages, over one session.
func (c *Client) ListCatalog(ctx context.Context, srv Server) (*Catalog, error) {
	out := &Catalog{}
	srv.tap = &tap{}
	defer func() {
		out.RawPrompts, out.RawResources, out.RawTemplates = srv.tap.list("prompts"), srv.tap.list("resources"), srv.tap.list("resourceTemplates")
	}()
	err := c.withSession(ctx, srv, func(cs *mcp.ClientSession) (err error) {
		if out.Prompts, err = listPrompts(ctx, cs); err != nil {
			return err
		}
		if out.Resources, err = listResources(ctx, cs); err != nil {
			return err
		}
		out.Templates, err = listResourceTemplates(ctx, cs)
		return err
	})
	return out, err
}

// ListPrompts lists a server's prompts, following pages.
func (c *Client) ListPrompts(ctx context.Context, srv Server) (prompts []*mcp.Prompt, err error) {
	err = c.withSession(ctx, srv, func(cs *mcp.ClientSession) error {
		prompts, err = listPrompts(ctx, cs)
		return err
	})
	return prompts, err
}

// ListResources lists a server's resources, following pages.
func (c *Client) ListResources(ctx context.Context, srv Server) (resources []*mcp.Resource, err error) {
	err = c.withSession(ctx, srv, func(cs *mcp.ClientSession) error {
		resources, err = listResources(ctx, cs)
		return err
	})
	return resources, err
}

// ListResourceTemplates lists a server's resource templates, following pages.
func (c *Client) ListResourceTemplates(ctx context.Context, srv Server) (templates []*mcp.ResourceTemplate, err error) {
	err = c.withSession(ctx, srv, func(cs *mcp.ClientSession) error {
		templates, err = listResourceTemplates(ctx, cs)
		return err
	})
	return templates, err
}

// withSession runs list on a fresh session, bounded by the request timeout.
func (c *Client) withSession(ctx context.Context, srv Server, list func(cs *mcp.ClientSession) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cs, w, err := c.connect(ctx, srv)
	if err != nil {
		return err
	}
	defer cs.Close()
	c.remember(srv, cs.InitializeResult().ProtocolVersion)
	if err := list(cs); err != nil {
		return w.wrap(ctx, err)
	}
	return nil
}

// maxPages bounds a listing, against a server that pages forever.
const maxPages = 100

// notOffered reports a server answering that it has no such list, which
// some do for a kind they declared without any entries.
func notOffered(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound
}

func serverCaps(cs *mcp.ClientSession) *mcp.ServerCapabilities {
	if res := cs.InitializeResult(); res != nil && res.Capabilities != nil {
		return res.Capabilities
	}
	return &mcp.ServerCapabilities{}
}

// pages follows a listing's cursors, at most maxPages pages, and gathers
// what each page lists.
func pages[T any](page func(cursor string) (items []T, next string, err error)) ([]T, error) {
	var out []T
	cursor := ""
	for range maxPages {
		items, next, err := page(cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			break
		}
		cursor = next
	}
	return out, nil
}

// offered is a listing's result, with a list the server says it does not
// offer read as empty.
func offered[T any](items []T, err error) ([]T, error) {
	if notOffered(err) {
		return nil, nil
	}
	return items, err
}

func listPrompts(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Prompt, error) {
	if serverCaps(cs).Prompts == nil {
		return nil, nil
	}
	return offered(pages(func(cursor string) ([]*mcp.Prompt, string, error) {
		res, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	}))
}

func listResources(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Resource, error) {
	if serverCaps(cs).Resources == nil {
		return nil, nil
	}
	return offered(pages(func(cursor string) ([]*mcp.Resource, string, error) {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	}))
}

func listResourceTemplates(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.ResourceTemplate, error) {
	if serverCaps(cs).Resources == nil {
		return nil, nil
	}
	return offered(pages(func(cursor string) ([]*mcp.ResourceTemplate, string, error) {
		res, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.ResourceTemplates, res.NextCursor, nil
	}))
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
	cs, w, err := c.connect(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	if srv.Held != nil && srv.Held.Sending != nil {
		if err := srv.Held.Sending(ctx); err != nil {
			return nil, err
		}
	}
	setLogLevel(ctx, cs, srv)
	var res any
	switch req.Method {
	case "", MethodCallTool:
		params := &mcp.CallToolParams{Name: req.Name, Arguments: req.Arguments}
		if srv.Progress != nil {
			params.SetProgressToken(handshakeProgressToken)
		}
		res, err = cs.CallTool(ctx, params)
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
	if refused := w.refusedQuestion(); refused != nil {
		// Whatever the server made of the refusal, the call ends with it.
		return nil, refused
	}
	if exited := w.exited(); exited != nil && err != nil {
		return nil, exited
	}
	if err != nil {
		return nil, w.wrap(ctx, err)
	}
	raw, err := MarshalRaw(res)
	if err != nil {
		return nil, err
	}
	return &Outcome{Result: raw, Protocol: version}, nil
}

// askSampling asks a person for a handshake-era server's sampling request
// and turns the answer into the result the server gets. A declined request
// is the JSON-RPC error that revision specifies for a rejected one.
//
// The person sees the params as the server sent them, kept by the wire
// under the request's id, and an accepted reply goes back as given.
func askSampling(ctx context.Context, held *Held, w *wire, id string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	params := w.params(id)
	if params == nil {
		var err error
		if params, err = json.Marshal(p); err != nil {
			return nil, err
		}
	}
	if err := checkHeld("sampling", params); err != nil {
		w.refuse(err)
		return nil, err
	}
	raw, err := held.Ask(ctx, Question{Key: "sampling", Method: "sampling/createMessage", Kind: KindSampling, Params: params})
	if err != nil {
		return nil, err
	}
	var refusal struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(raw, &refusal) == nil && refusal.Action != "" {
		return nil, &jsonrpc.Error{Code: CodeSamplingRejected, Message: "User rejected sampling request"}
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	if id != "" {
		w.answer(id, raw)
	}
	return &res, nil
}

// CodeSamplingRejected is the JSON-RPC error code of a sampling request the
// person declined, as handshake-era revisions give it.
const CodeSamplingRejected = -1

// wrapSDK turns a go-sdk error into ours: a JSON-RPC error from the server,
// or a failure to reach it.
func wrapSDK(ctx context.Context, err error) error {
	var we *mcpWireError
	if errors.As(err, &we) && we.Code != codeRejectedByTransport {
		return &ServerError{Code: we.Code, Message: we.Message}
	}
	return transportError(ctx, err)
}

type mcpWireError = jsonrpc.Error

// wrap is wrapSDK, but a request the server refused with an HTTP status is
// reported with that status and the server's own message.
func (w *wire) wrap(ctx context.Context, err error) error {
	if err != nil && w.auth != nil {
		// A request the server refused for want of a sign-in (or of
		// scopes), wherever in the session it was: tools/list after an
		// open initialize, or a call on a held session.
		if ae := w.auth.challenge(); ae != nil {
			return ae
		}
	}
	var we *mcpWireError
	if errors.As(err, &we) && we.Code != codeRejectedByTransport {
		return &ServerError{Code: we.Code, Message: we.Message}
	}
	if r := w.lastRefusal(); r != nil && ctx.Err() == nil {
		return r
	}
	return wrapSDK(ctx, err)
}

// codeRejectedByTransport is the go-sdk's code for a request that never
// reached the server.
const codeRejectedByTransport = -32005
