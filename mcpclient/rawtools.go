package mcpclient

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// tap keeps a copy of every response body read while listing tools, so each
// tool can be given back exactly as the server sent it: the go-sdk decodes
// inputSchema into a map, which loses the server's key order and number
// spelling.
type tap struct {
	base http.RoundTripper
	mu   sync.Mutex
	bufs []*bytes.Buffer
}

func (t *tap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	buf := &bytes.Buffer{}
	t.mu.Lock()
	t.bufs = append(t.bufs, buf)
	t.mu.Unlock()
	resp.Body = &tapBody{rc: resp.Body, t: t, buf: buf}
	return resp, nil
}

type tapBody struct {
	rc  io.ReadCloser
	t   *tap
	buf *bytes.Buffer
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.t.mu.Lock()
	b.buf.Write(p[:n])
	b.t.mu.Unlock()
	return n, err
}

func (b *tapBody) Close() error { return b.rc.Close() }

// tools returns every tool object seen in a tools/list result, by name, as
// the server's bytes.
func (t *tap) tools() map[string]json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]json.RawMessage{}
	for _, buf := range t.bufs {
		for _, msg := range messages(buf.Bytes()) {
			var m struct {
				Result struct {
					Tools []json.RawMessage `json:"tools"`
				} `json:"result"`
			}
			if json.Unmarshal(msg, &m) != nil {
				continue
			}
			for _, raw := range m.Result.Tools {
				var named struct {
					Name string `json:"name"`
				}
				if json.Unmarshal(raw, &named) == nil && named.Name != "" {
					out[named.Name] = raw
				}
			}
		}
	}
	return out
}

// list returns every object of the named list (prompts, resources,
// resourceTemplates) seen in results, in the order they came, as the
// server's bytes.
func (t *tap) list(key string) []json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []json.RawMessage{}
	for _, buf := range t.bufs {
		for _, msg := range messages(buf.Bytes()) {
			var m struct {
				Result map[string]json.RawMessage `json:"result"`
			}
			if json.Unmarshal(msg, &m) != nil {
				continue
			}
			var items []json.RawMessage
			if json.Unmarshal(m.Result[key], &items) == nil {
				out = append(out, items...)
			}
		}
	}
	return out
}

// messages splits a response body into its JSON-RPC messages: the body
// itself when it is JSON, else the data of each server-sent event.
func messages(body []byte) [][]byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return [][]byte{trimmed}
	}
	var out [][]byte
	var data []string
	flush := func() {
		if len(data) > 0 {
			out = append(out, []byte(strings.Join(data, "\n")))
			data = nil
		}
	}
	for line := range strings.SplitSeq(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n") {
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	flush()
	return out
}
