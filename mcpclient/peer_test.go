package mcpclient_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// rawPeer is a minimal 2026-07-28 server written against the wire format, so
// tests control every byte it sends and see every byte it receives.
type rawPeer struct {
	t *testing.T
	// answer returns the raw JSON result for the nth tools/call (from 0).
	answer func(n int, params json.RawMessage) string

	mu     sync.Mutex
	calls  []peerCall
	header http.Header
}

type peerCall struct {
	ID     json.RawMessage
	Params json.RawMessage
	Body   []byte
}

func newRawPeer(t *testing.T, answer func(n int, params json.RawMessage) string) (*rawPeer, string) {
	t.Helper()
	p := &rawPeer{t: t, answer: answer}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *rawPeer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if msg.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch msg.Method {
	case "server/discover":
		result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"raw-peer","version":"1"}}}`
	case "tools/call":
		p.mu.Lock()
		n := len(p.calls)
		p.calls = append(p.calls, peerCall{ID: msg.ID, Params: msg.Params, Body: body})
		p.header = r.Header.Clone()
		p.mu.Unlock()
		result = p.answer(n, msg.Params)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32601,"message":"method not found"}}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":`+result+`}`)
}

func (p *rawPeer) recorded() []peerCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]peerCall(nil), p.calls...)
}
