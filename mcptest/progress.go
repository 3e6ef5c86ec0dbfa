package mcptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Reporter is a 2026-07-28 server with one tool, long_report, that works
// in steps and says how far it got after each, on its response's stream
// (notifications/progress for the request's progressToken), then answers.
type Reporter struct {
	URL string // the /mcp endpoint

	mu     sync.Mutex
	tokens []json.RawMessage // the progressToken of each tools/call
}

// NewReporter starts a Reporter whose tool takes steps, each every apart.
func NewReporter(tb testing.TB, steps int, every time.Duration) *Reporter {
	tb.Helper()
	r := &Reporter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + `}`))
		}
		switch msg.Method {
		case "server/discover":
			reply(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"reporter","version":"1"},"resultType":"complete"}`)
		case "tools/list":
			reply(`{"tools":[{"name":"long_report","title":"A long report","inputSchema":{"type":"object"}}],"resultType":"complete"}`)
		case "tools/call":
			r.mu.Lock()
			r.tokens = append(r.tokens, msg.Params.Meta.ProgressToken)
			r.mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			event := func(data string) {
				_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", data)
				w.(http.Flusher).Flush()
			}
			for i := 1; i <= steps; i++ {
				select {
				case <-req.Context().Done():
					return
				case <-time.After(every):
				}
				if msg.Params.Meta.ProgressToken != nil {
					event(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":%d,"message":"Step %d of %d <b>"}}`,
						msg.Params.Meta.ProgressToken, i, steps, i, steps))
				}
			}
			event(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"The report is done."}],"resultType":"complete"}}`)
		default:
			http.Error(w, "not here", http.StatusNotFound)
		}
	}))
	tb.Cleanup(srv.Close)
	r.URL = srv.URL + "/mcp"
	return r
}

// Tokens returns the progressToken each tools/call carried, as sent.
func (r *Reporter) Tokens() []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]json.RawMessage(nil), r.tokens...)
}
