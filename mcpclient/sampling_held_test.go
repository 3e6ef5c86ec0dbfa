package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// samplingParams is a sampling request as the Python SDK writes it: its
// fields in the order of its model, not the go-sdk's.
const samplingParams = `{"messages":[{"role":"user","content":{"type":"text","text":"What is the capital of France?"}}],` +
	`"modelPreferences":{"hints":[{"name":"sonnet"}],"intelligencePriority":0.9},"systemPrompt":"Answer in one word.",` +
	`"temperature":0.2,"maxTokens":50,"stopSequences":["\n\n"]}`

// samplingServer is a handshake-era server whose one tool asks for
// sampling on the tools/call stream, as Python servers do, and records the
// body of the reply it gets.
type samplingServer struct {
	reply chan struct{} // our reply arrived

	mu   sync.Mutex
	body string // our reply, as received
}

func (s *samplingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	event := func(data string) {
		_, _ = fmt.Fprintf(w, "event: message\r\ndata: %s\r\n\r\n", data)
		w.(http.Flusher).Flush()
	}
	stream := func() {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "s1")
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusOK)
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case msg.Method == "initialize":
		stream()
		event(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"sampler","version":"1.29.0"}}}`)
	case msg.Method == "tools/call":
		stream()
		event(`{"method":"sampling/createMessage","params":` + samplingParams + `,"jsonrpc":"2.0","id":0}`)
		select {
		case <-s.reply:
		case <-r.Context().Done():
			return
		}
		event(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"sampled"}],"isError":false}}`)
	case msg.Method == "":
		s.mu.Lock()
		s.body = string(body)
		s.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		s.reply <- struct{}{}
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// TestHeldSamplingRaw: a sampling request on a held session reaches the
// person with its params byte for byte, in the server's key order, and the
// person's reply goes back as given.
func TestHeldSamplingRaw(t *testing.T) {
	t.Parallel()
	s := &samplingServer{reply: make(chan struct{}, 1)}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	answer := `{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"human","stopReason":"endTurn"}`
	var asked []mcpclient.Question
	srv := mcpclient.Server{URL: ts.URL, Protocol: mcpclient.ProtocolHandshake,
		Capabilities: mcpclient.Capabilities{FormElicitation: true, Sampling: true}}
	srv.Held = &mcpclient.Held{
		Sending: func(context.Context) error { return nil },
		Ask: func(_ context.Context, q mcpclient.Question) (json.RawMessage, error) {
			asked = append(asked, q)
			return json.RawMessage(answer), nil
		},
	}
	out, err := newClient().Send(ctx(t), srv, mcpclient.Request{Name: "sample"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out.Result), `"sampled"`) {
		t.Errorf("result = %s", out.Result)
	}
	if len(asked) != 1 || asked[0].Kind != mcpclient.KindSampling {
		t.Fatalf("asked %+v, want one sampling question", asked)
	}
	if got := string(asked[0].Params); got != samplingParams {
		t.Errorf("the person was shown\n%s\nwant the server's params byte for byte\n%s", got, samplingParams)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if want := `{"jsonrpc":"2.0","id":0,"result":` + answer + `}`; s.body != want {
		t.Errorf("the server got the reply\n%s\nwant it as given\n%s", s.body, want)
	}
}
