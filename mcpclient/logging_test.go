package mcpclient_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// TestServerLogsDuringARequest: a 2026-07-28 request asks the server for
// its log messages at the level set, in _meta; those of that level and
// above that it sends on the response's stream are told in order, with
// data past 4 KB left out, and the progress with them. Without a level,
// the server is asked for none and none is told.
func TestServerLogsDuringARequest(t *testing.T) {
	var mu sync.Mutex
	var levels []string
	big := strings.Repeat("x", 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "server/discover" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"logger","version":"1"},"resultType":"complete"}}`, msg.ID)
			return
		}
		mu.Lock()
		levels = append(levels, string(msg.Params.Meta[mcpclient.MetaLogLevel]))
		mu.Unlock()
		token := msg.Params.Meta["progressToken"]
		w.Header().Set("Content-Type", "text/event-stream")
		for _, n := range []string{
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","data":"too fine"}}`,
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"db","data":{"rows":3}}}`,
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(token) + `,"progress":1,"total":2}}`,
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"` + big + `"}}`,
		} {
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", n)
		}
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[],\"resultType\":\"complete\"}}\n\n", msg.ID)
	}))
	t.Cleanup(srv.Close)

	var heard []string
	s := mcpclient.Server{URL: srv.URL, LogLevel: "info",
		Log:      func(m mcpclient.LogMessage) { heard = append(heard, m.Level+" "+m.Logger+" "+string(m.Data)) },
		Progress: func(p mcpclient.Progress) { heard = append(heard, fmt.Sprintf("progress %v", p.Progress)) }}
	if _, err := newClient().Send(ctx(t), s, mcpclient.Request{Name: "work"}, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{`info db {"rows":3}`, "progress 1", `error  "(5002 bytes of log data, left out by Rounds)"`}
	if !slices.Equal(heard, want) {
		t.Errorf("told %q, want %q", heard, want)
	}

	heard = nil
	s.LogLevel = ""
	if _, err := newClient().Send(ctx(t), s, mcpclient.Request{Name: "work"}, nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"progress 1"}; !slices.Equal(heard, want) {
		t.Errorf("without a level, told %q, want %q", heard, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{`"info"`, ""}; !slices.Equal(levels, want) {
		t.Errorf("the server was asked for the levels %q, want %q", levels, want)
	}
}
