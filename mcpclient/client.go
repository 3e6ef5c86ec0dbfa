// Package mcpclient talks to MCP servers over Streamable HTTP on top of the
// official go-sdk, with the SDK's automatic multi round-trip handling turned
// off: an input_required result comes back to the caller as a Round, with its
// inputRequests and requestState exactly as the server sent them.
package mcpclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol revisions this client knows by name.
const (
	ProtocolStateless = "2026-07-28"
	ProtocolHandshake = "2025-11-25"
)

// Revisions are the protocol revisions this client speaks, newest first:
// 2026-07-28 request by request, the others over the go-sdk's initialize
// handshake (the revisions it supports).
var Revisions = []string{ProtocolStateless, ProtocolHandshake, "2025-06-18", "2025-03-26", "2024-11-05"}

// ProtocolAuto is the protocol setting that pins no revision: a server
// set to it, or a call started with it, prefers 2026-07-28 and negotiates
// down.
const ProtocolAuto = "auto"

// KnownRevision reports whether s is one of Revisions: a revision a server
// may be pinned to or a call started with. It does not accept "" or
// ProtocolAuto, which leave the choice to negotiation; callers that take
// those say so themselves.
func KnownRevision(s string) bool { return slices.Contains(Revisions, s) }

// Methods that may answer input_required.
const (
	MethodCallTool     = "tools/call"
	MethodGetPrompt    = "prompts/get"
	MethodReadResource = "resources/read"
)

// Options configures a Client. Zero values take the documented defaults.
type Options struct {
	// HTTPClient is shared by every request, so connections are reused.
	HTTPClient *http.Client
	// Name and Version identify this client to servers.
	Name, Version string
	// MaxRequestState caps a requestState's size in bytes; default 4 MiB.
	MaxRequestState int
	// MaxResponse caps a response body in bytes; default 32 MiB.
	MaxResponse int64
	// ShedRetries bounds the retries of an input_required result that asks
	// nothing (load shedding); default 3.
	ShedRetries int
	// ShedBackoff is the first wait before such a retry; it doubles each time.
	// Default 100ms.
	ShedBackoff time.Duration
	// DiscoveryTTL is how long a server's negotiated version is remembered;
	// default 10 minutes.
	DiscoveryTTL time.Duration
	// RequestTimeout bounds each request but a held session's call, which
	// waits for people and is bounded by its context; default 30s.
	RequestTimeout time.Duration
	// Locals are the local servers, spoken to over stdio, that a server
	// URL starting with LocalScheme names.
	Locals *Locals
}

// Server is where requests go and what we tell it we can answer.
type Server struct {
	URL string
	// Header is added to every request, for credentials.
	Header http.Header
	// Protocol pins a revision; empty prefers 2026-07-28 and negotiates down.
	Protocol     string
	Capabilities Capabilities
	// Roots are what a handshake-era server's roots/list is answered with,
	// when Capabilities.Roots is set.
	Roots []Root
	// Held answers the questions a handshake-era server asks while a call
	// is open. Without it such a server gets no capabilities declared.
	Held *Held
	// Token is an OAuth access token for the server, sent only to its
	// origin as "Authorization: Bearer".
	Token string
	// Progress, when set, is told each notifications/progress the server
	// sends on a 2026-07-28 request's stream, or in a held handshake-era
	// session: every such request carries a progressToken.
	Progress func(Progress)
	// LogLevel, when set with Log, is the least severe log message the
	// server is asked for (logging/setLevel in a handshake-era session,
	// the request's _meta in 2026-07-28); Log is told each one it sends
	// while a request runs, of that level or above.
	LogLevel string
	Log      func(LogMessage)
	// tap, when set, keeps a copy of the response bodies.
	tap *tap
	// process, for a local server, is the process a 2026-07-28 request
	// goes to (see stdio.go).
	process *Process
}

// Progress is what a server said of a request's progress: how far it is,
// out of Total when it knows (nil when not), and what it is doing.
type Progress struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`
}

// Root is a file:// URI a server may look at, with an optional name.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// Held is how a handshake-era server's mid-call questions get answered.
type Held struct {
	// Sending is told just before the call goes out on a held session; an
	// error stops it from going out.
	Sending func(ctx context.Context) error
	// Ask blocks until the question is answered (or given up on) and
	// returns the result to send back, as JSON: an ElicitResult, or for
	// sampling a CreateMessageResult or an object with an "action" when
	// the person declined.
	Ask func(ctx context.Context, q Question) (json.RawMessage, error)
	// Completed is told when the server finishes a URL-mode question's
	// outbound step (notifications/elicitation/complete).
	Completed func(elicitationID string)
}

// Capabilities says which kinds of input request the client serves. Only
// these are declared to the server, and a round asking for anything else
// fails with an UndeclaredError.
type Capabilities struct {
	FormElicitation bool
	URLElicitation  bool
	Sampling        bool
	Roots           bool
}

// Client sends MCP requests. It is safe for concurrent use.
type Client struct {
	http        *http.Client
	impl        mcp.Implementation
	maxState    int
	shedRetries int
	shedBackoff time.Duration
	ttl         time.Duration
	timeout     time.Duration
	locals      *Locals

	mu        sync.Mutex
	discovery map[string]discovered // by server URL and pinned protocol
}

type discovered struct {
	version string
	until   time.Time
}

// New returns a Client.
func New(opts Options) *Client {
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	maxResponse := opts.MaxResponse
	if maxResponse <= 0 {
		maxResponse = 32 << 20
	}
	c := &Client{
		impl:        mcp.Implementation{Name: cmpOr(opts.Name, "rounds"), Version: cmpOr(opts.Version, "dev")},
		maxState:    opts.MaxRequestState,
		shedRetries: opts.ShedRetries,
		shedBackoff: opts.ShedBackoff,
		ttl:         opts.DiscoveryTTL,
		discovery:   map[string]discovered{},
		locals:      opts.Locals,
	}
	if c.maxState <= 0 {
		c.maxState = 4 << 20
	}
	if c.shedRetries <= 0 {
		c.shedRetries = 3
	}
	if c.shedBackoff <= 0 {
		c.shedBackoff = 100 * time.Millisecond
	}
	if c.ttl <= 0 {
		c.ttl = 10 * time.Minute
	}
	if c.timeout = opts.RequestTimeout; c.timeout <= 0 {
		c.timeout = 30 * time.Second
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.http = &http.Client{
		Timeout:       base.Timeout,
		Jar:           base.Jar,
		Transport:     &limitTransport{base: rt, max: maxResponse},
		CheckRedirect: sameOriginRedirects,
	}
	return c
}

// MaxRequestState is the largest requestState, in bytes, this client keeps.
func (c *Client) MaxRequestState() int { return c.maxState }

// httpFor returns an HTTP client that adds the server's headers to the
// requests going to the server's own origin, and to no other, with its
// token, recording in box any authorization challenge it answers with.
func (c *Client) httpFor(srv Server, box *authBox) *http.Client {
	rt := c.http.Transport
	if srv.tap != nil {
		srv.tap.base = rt
		rt = srv.tap
	}
	box.base = rt
	rt = box
	if len(srv.Header) > 0 {
		home := "" // a URL that does not parse gets no headers
		if u, err := url.Parse(srv.URL); err == nil {
			home = origin(u)
		}
		rt = &headerTransport{base: rt, header: srv.Header, origin: home}
	}
	return &http.Client{Timeout: c.http.Timeout, Transport: rt, CheckRedirect: c.http.CheckRedirect}
}

// wired returns an HTTP client for srv whose traffic goes through a wire of
// its own (see wire.go); held says whether elicitations are rewritten.
func (c *Client) wired(srv Server, held bool) (*http.Client, *wire) {
	box := newAuthBox(srv)
	hc := *c.httpFor(srv, box)
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	w := newWire(rt, held)
	w.auth = box
	hc.Transport = w
	return &hc, w
}

// newRequestID returns a JSON-RPC id no other request of ours shares, in
// this process or any other: a fresh go-sdk session numbers its requests
// from 1, so a retry sent after a restart would otherwise reuse the id of
// the request it retries.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "rounds-" + hex.EncodeToString(b[:])
}

// ServerError is a JSON-RPC error answered by the server.
type ServerError struct {
	Code    int64
	Message string
	// Reason is the error's data.reason, when it has one.
	Reason string
	// Data is the error's data as sent, when small.
	Data json.RawMessage
}

// smallData keeps an error's data when it is valid JSON of at most 8 KiB.
func smallData(d json.RawMessage) json.RawMessage {
	if len(d) == 0 || len(d) > 8<<10 || !json.Valid(d) || string(d) == "null" {
		return nil
	}
	return bytes.Clone(d)
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("the server answered with error %d: %s", e.Code, e.Message)
}

// UnreachableError means the request may not have reached the server, or
// its answer did not reach us: the server is down, slow or misbehaving.
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string { return "cannot reach the server: " + e.Err.Error() }
func (e *UnreachableError) Unwrap() error { return e.Err }

// ErrResponseTooLarge is returned when a response exceeds Options.MaxResponse.
var ErrResponseTooLarge = errors.New("the server's response is larger than this client accepts")

// limitTransport refuses response bodies above max bytes, so a hostile
// server cannot exhaust memory.
type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if se := statusError(resp, time.Now()); se != nil {
		// The go-sdk would drop the status and Retry-After; keep them.
		return nil, se
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Find out whether there is more before calling it an error.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, ErrResponseTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

type headerTransport struct {
	base   http.RoundTripper
	header http.Header
	origin string // the only origin the header is sent to
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != t.origin {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, vs := range t.header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// capabilitiesJSON is the clientCapabilities object declared to the server.
func (caps Capabilities) json() map[string]any {
	out := map[string]any{}
	if caps.FormElicitation || caps.URLElicitation {
		el := map[string]any{}
		if caps.FormElicitation {
			el["form"] = map[string]any{}
		}
		if caps.URLElicitation {
			el["url"] = map[string]any{}
		}
		out["elicitation"] = el
	}
	if caps.Sampling {
		out["sampling"] = map[string]any{}
	}
	if caps.Roots {
		out["roots"] = map[string]any{}
	}
	return out
}

func (caps Capabilities) sdk() *mcp.ClientCapabilities {
	out := &mcp.ClientCapabilities{}
	if caps.FormElicitation || caps.URLElicitation {
		out.Elicitation = &mcp.ElicitationCapabilities{}
		if caps.FormElicitation {
			out.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
		if caps.URLElicitation {
			out.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
	}
	if caps.Sampling {
		out.Sampling = &mcp.SamplingCapabilities{}
	}
	if caps.Roots {
		out.RootsV2 = &mcp.RootCapabilities{}
	}
	return out
}

// ctxDone reports a context error, preferring it over a transport error
// caused by it.
func ctxDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
