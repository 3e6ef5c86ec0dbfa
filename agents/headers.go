package agents

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// removedMethods are the methods 2026-07-28 took out: a stateless request
// for one is answered as for any unknown method (404, -32601). A
// 2025-11-25 session still has them (session.go).
var removedMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
}

// allowedOrigin reports whether a request may come from where its Origin
// and Host say (DNS rebinding): an Origin, when sent, must be Rounds' own
// (PUBLIC_URL); and a Rounds whose PUBLIC_URL is on the loopback answers
// only requests that name a loopback host, since any other name resolving
// there is a rebinding.
func (d *Door) allowedOrigin(r *http.Request) bool {
	public, err := url.Parse(d.o.PublicURL)
	if err != nil {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Scheme, public.Scheme) || !strings.EqualFold(u.Host, public.Host) {
			return false
		}
	}
	return !loopback(public.Hostname()) || loopback(hostOnly(r.Host))
}

// hostOnly is a Host header without its port.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.Trim(h, "[]")
}

// loopback reports a host name that names this machine.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// forbidden answers a request from an Origin (or Host) Rounds does not
// serve agents at.
func forbidden(w http.ResponseWriter) {
	writeError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest, "Requests from this origin are not accepted.", nil)
}

// headerMismatch is the -32020 error of a request whose standard headers
// do not say what its body says.
func headerMismatch(msg string) *RPCError {
	return &RPCError{Status: http.StatusBadRequest, Code: CodeHeaderMismatch, Message: "Header mismatch: " + msg}
}

// checkHeaders checks a 2026-07-28 request's Mcp-Method and Mcp-Name
// headers against its body.
func (q *Request) checkHeaders() error {
	method, ok := headerValue(q.R.Header, "Mcp-Method")
	switch {
	case !ok:
		return headerMismatch("the Mcp-Method header is missing.")
	case method != q.Method:
		return headerMismatch("the Mcp-Method header does not match the request's method.")
	}
	var p struct {
		Name *string `json:"name"`
		URI  *string `json:"uri"`
	}
	_ = json.Unmarshal(q.Params, &p)
	var body *string
	switch q.Method {
	case "tools/call", "prompts/get":
		body = p.Name
	case "resources/read":
		body = p.URI
	default:
		return nil
	}
	if body == nil {
		return nil
	}
	name, ok := headerValue(q.R.Header, "Mcp-Name")
	if !ok {
		return headerMismatch("the Mcp-Name header is missing.")
	}
	decoded, ok := decodeHeader(name)
	if !ok || decoded != *body {
		return headerMismatch("the Mcp-Name header does not match the request's name.")
	}
	return nil
}

// headerValue is a header's value without the whitespace around it.
func headerValue(h http.Header, name string) (string, bool) {
	v, ok := h[http.CanonicalHeaderKey(name)]
	if !ok || len(v) == 0 {
		return "", false
	}
	return strings.Trim(v[0], " \t"), true
}

// decodeHeader decodes a header value that may be Base64-encoded
// (=?base64?…?=); it reports false for a value that is not valid.
func decodeHeader(v string) (string, bool) {
	for _, c := range []byte(v) {
		if (c < 0x20 || c > 0x7e) && c != '\t' {
			return "", false
		}
	}
	// Only a value both starting =?base64? and ending ?= is encoded; any
	// other is literal.
	if len(v) < len("=?base64??=") || !strings.HasPrefix(v, "=?base64?") || !strings.HasSuffix(v, "?=") {
		return v, true
	}
	inner := v[len("=?base64?") : len(v)-len("?=")]
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// statelessMeta reports whether params carry 2026-07-28's per-request
// _meta: an initialize that does is a stateless request for a method
// that revision removed, not the start of a session.
func statelessMeta(params json.RawMessage) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	_, ok := p.Meta["io.modelcontextprotocol/protocolVersion"]
	return ok
}

// checkParamHeaders checks a tools/call's Mcp-Param-* headers against its
// arguments, for each property of the tool's inputSchema that names one
// (x-mcp-header): an argument given must come with its header, equal.
func (q *Request) checkParamHeaders() error {
	var p struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if q.Method != "tools/call" || json.Unmarshal(q.Params, &p) != nil || len(p.Arguments) == 0 {
		return nil
	}
	tool, _ := q.d.o.Catalog.CachedTool(q.Server, p.Name)
	if tool == nil {
		var err error
		if tool, err = q.d.o.Catalog.Tool(q.Ctx, q.Who.User.Name, q.Server, p.Name); err != nil || tool == nil {
			return nil // the call itself says what is wrong
		}
	}
	raw, err := json.Marshal(tool.InputSchema)
	if err != nil {
		return nil
	}
	var schema struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(raw, &schema)
	for prop, s := range schema.Properties {
		arg, ok := p.Arguments[prop]
		if s.Header == "" || !ok || string(arg) == "null" {
			continue
		}
		v, ok := headerValue(q.R.Header, "Mcp-Param-"+s.Header)
		if !ok {
			return headerMismatch("the Mcp-Param-" + s.Header + " header is missing.")
		}
		decoded, ok := decodeHeader(v)
		if !ok || !sameValue(decoded, arg) {
			return headerMismatch("the Mcp-Param-" + s.Header + " header does not match the argument " + prop + ".")
		}
	}
	return nil
}

// sameValue reports whether a header's value is an argument's: a string
// as it is, a number compared as a number, a boolean as true or false.
func sameValue(header string, arg json.RawMessage) bool {
	var v any
	if json.Unmarshal(arg, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case string:
		return header == v
	case float64:
		f, err := strconv.ParseFloat(header, 64)
		return err == nil && f == v
	case bool:
		return header == strconv.FormatBool(v)
	}
	return false
}
