package mcpclient

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
)

// wire sits between the go-sdk and the HTTP connection of one session (or
// one request) and keeps what the SDK would lose:
//
//   - A response the server refused with an HTTP status (a 4xx or 5xx with
//     a body) reaches the SDK only as "Bad Request"; its status and the
//     server's own message are kept here.
//   - On a held session, the SDK decodes an elicitation's params into Go
//     maps, which reorders the schema's properties, and refuses schemas it
//     does not know (FastMCP's untitled multi-select) before anyone is
//     asked. The raw params are kept here, by the server's request id; the
//     SDK is handed the request without its schema (which it allows), and
//     our answer goes back byte for byte instead of the SDK's re-encoding.
//     A sampling request's params are kept the same way (the SDK would
//     re-encode them in its own key order), and handed on whole.
type wire struct {
	base http.RoundTripper
	held bool     // rewrite elicitations (held sessions only)
	auth *authBox // the token, and the server's authorization challenge
	// local is the connection of a local server's process of its own,
	// which stands in for HTTP (see stdio.go).
	local *sessionConn

	mu      sync.Mutex
	refused *HTTPError
	asking  error                      // a question of the server's this client refused, which ends the call
	asked   map[string]json.RawMessage // raw elicitation and sampling params, by request id
	answers map[string]json.RawMessage // our raw answers, by request id
}

// wireKey marks an elicitation's params with the server's request id, so
// the handler can find the raw params the request came with.
const wireKey = "io.rounds/wire-id"

// maxRefusal bounds how much of a refusal's body is read.
const maxRefusal = 64 << 10

// HTTPError is a request the server answered with an HTTP error status.
// Message is the server's own words: the JSON-RPC error's message when the
// body is one, else the body's text.
type HTTPError struct {
	Status  int
	Code    int64 // the JSON-RPC error code, when the body is one
	Message string
	// Reason is the JSON-RPC error's data.reason, when it has one.
	Reason string
	// Data is the JSON-RPC error's data as sent, when small.
	Data json.RawMessage
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("the server answered HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

func newWire(base http.RoundTripper, held bool) *wire {
	return &wire{base: base, held: held, asked: map[string]json.RawMessage{}, answers: map[string]json.RawMessage{}}
}

// lastRefusal returns the latest HTTP error status the server answered with.
func (w *wire) lastRefusal() *HTTPError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused
}

// refuse records that a question the server asked on the session was
// refused, so that the call ends with err whatever the server answers.
func (w *wire) refuse(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.asking == nil {
		w.asking = err
	}
}

// refusedQuestion returns the first question refusal, if any.
func (w *wire) refusedQuestion() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.asking
}

// params returns the raw params of the server's request id.
func (w *wire) params(id string) json.RawMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.asked[id]
}

// answer sends raw, byte for byte, as the result of the server's request id.
func (w *wire) answer(id string, raw json.RawMessage) {
	w.mu.Lock()
	w.answers[id] = raw
	w.mu.Unlock()
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	if w.held && req.Method == http.MethodPost && req.Body != nil {
		if body, ok := w.ourAnswer(req); ok {
			req = req.Clone(req.Context())
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.ContentLength = int64(len(body))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
	}
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		w.mu.Lock()
		w.refused = nil
		w.mu.Unlock()
		return nil, err
	}
	if resp.StatusCode >= 400 {
		w.refusal(resp)
		return resp, nil
	}
	w.mu.Lock()
	w.refused = nil
	w.mu.Unlock()
	if w.held && isEventStream(resp.Header.Get("Content-Type")) {
		resp.Body = &eventRewriter{r: bufio.NewReader(resp.Body), c: resp.Body, w: w}
	}
	return resp, nil
}

// refusal keeps what an error response says, and gives the SDK the same
// bytes to read.
func (w *wire) refusal(resp *http.Response) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	e := &HTTPError{Status: resp.StatusCode}
	var rpc struct {
		Error *struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &rpc) == nil && rpc.Error != nil {
		e.Code, e.Message, e.Reason = rpc.Error.Code, rpc.Error.Message, dataReason(rpc.Error.Data)
		e.Data = smallData(rpc.Error.Data)
	} else {
		e.Message = strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD"))
		if r := []rune(e.Message); len(r) > 500 {
			e.Message = string(r[:500]) + "…"
		}
	}
	w.mu.Lock()
	w.refused = e
	w.mu.Unlock()
}

// ourAnswer replaces the SDK's encoding of an elicitation result with the
// answer as stored, when the body is the response to such a request.
func (w *wire) ourAnswer(req *http.Request) ([]byte, bool) {
	w.mu.Lock()
	pending := len(w.answers) > 0
	w.mu.Unlock()
	if !pending {
		return nil, false
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "" || msg.Result == nil || msg.ID == nil {
		return body, true
	}
	id := compact(msg.ID)
	w.mu.Lock()
	raw, ok := w.answers[id]
	delete(w.answers, id)
	delete(w.asked, id)
	w.mu.Unlock()
	if !ok {
		return body, true
	}
	out := make([]byte, 0, len(raw)+len(id)+40)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	out = append(out, raw...)
	out = append(out, '}')
	return out, true
}

// seen looks at one message from the server. An elicitation/create or
// sampling/createMessage request is kept raw and handed on marked with its
// id (a form elicitation without its schema); anything else passes
// unchanged.
func (w *wire) seen(data []byte) []byte {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.ID == nil || (msg.Method != "elicitation/create" && msg.Method != "sampling/createMessage") {
		return data
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg.Params, &params) != nil {
		return data
	}
	id := compact(msg.ID)
	w.mu.Lock()
	w.asked[id] = bytes.Clone(msg.Params)
	w.mu.Unlock()
	var mode string
	_ = json.Unmarshal(params["mode"], &mode)
	if msg.Method == "elicitation/create" && (mode == "" || mode == "form") {
		delete(params, "requestedSchema")
	}
	meta := map[string]json.RawMessage{}
	_ = json.Unmarshal(params["_meta"], &meta)
	meta[wireKey], _ = json.Marshal(id)
	params["_meta"], _ = json.Marshal(meta)
	var full map[string]json.RawMessage
	if json.Unmarshal(data, &full) != nil {
		return data
	}
	full["params"], _ = json.Marshal(params)
	out, err := json.Marshal(full)
	if err != nil {
		return data
	}
	return out
}

func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

func isEventStream(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "text/event-stream"
}

// eventRewriter passes an SSE stream through line by line, handing each
// single-line data field to the wire. It streams: a held session's events
// arrive minutes apart.
type eventRewriter struct {
	r   *bufio.Reader
	c   io.Closer
	w   *wire
	buf []byte
	err error
}

func (e *eventRewriter) Read(p []byte) (int, error) {
	for len(e.buf) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		line, err := e.r.ReadBytes('\n')
		e.err = err
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			body := bytes.TrimLeft(data, " ")
			end := bytes.TrimRight(body, "\r\n")
			if out := e.w.seen(end); !bytes.Equal(out, end) {
				line = append(append([]byte("data: "), out...), body[len(end):]...)
			}
		}
		e.buf = line
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	return n, nil
}

func (e *eventRewriter) Close() error { return e.c.Close() }
