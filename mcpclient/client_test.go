package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
)

const formOnly = `{"who":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}}`

// trickyState exercises escapes a decode-and-re-encode would normalize.
const trickyState = `"a\u0062c <&> \/ \u00e9 é \ud83d\ude00 \"q\" \\"`

func newClient() *mcpclient.Client {
	return mcpclient.New(mcpclient.Options{ShedBackoff: time.Millisecond})
}

func forms(url string) mcpclient.Server {
	return mcpclient.Server{URL: url, Capabilities: mcpclient.Capabilities{FormElicitation: true}}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestRequestStateEchoedByteForByte(t *testing.T) {
	peer, url := newRawPeer(t, func(n int, _ json.RawMessage) string {
		if n == 0 {
			return `{"resultType":"input_required","inputRequests":` + formOnly + `,"requestState":` + trickyState + `}`
		}
		return `{"content":[{"type":"text","text":"done"}]}`
	})
	c := newClient()
	out, err := c.Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Round == nil {
		t.Fatalf("want a round, got result %s", out.Result)
	}
	if string(out.Round.RequestState) != trickyState {
		t.Fatalf("stored state = %s, want %s", out.Round.RequestState, trickyState)
	}
	if string(out.Round.InputRequests) != formOnly {
		t.Fatalf("inputRequests = %s, want them as sent", out.Round.InputRequests)
	}
	responses := `{"who":{"action":"accept","content":{"name":"Ada <&>"}}}`
	out, err = c.Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, &mcpclient.Answers{
		InputResponses: json.RawMessage(responses), RequestState: out.Round.RequestState,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Round != nil || !strings.Contains(string(out.Result), "done") {
		t.Fatalf("want the final result, got %+v", out)
	}
	calls := peer.recorded()
	if len(calls) != 2 {
		t.Fatalf("peer saw %d calls, want 2", len(calls))
	}
	if !bytes.Contains(calls[1].Body, []byte(`"requestState":`+trickyState)) {
		t.Errorf("retry body does not carry the state byte for byte:\n%s", calls[1].Body)
	}
	if !bytes.Contains(calls[1].Body, []byte(`"inputResponses":`+responses)) {
		t.Errorf("retry body does not carry the responses as given:\n%s", calls[1].Body)
	}
	if bytes.Equal(calls[0].ID, calls[1].ID) {
		t.Errorf("retry reused the JSON-RPC id %s", calls[0].ID)
	}
}

func TestNoRequestStateWhenNoneSent(t *testing.T) {
	peer, url := newRawPeer(t, func(n int, _ json.RawMessage) string {
		if n == 0 {
			return `{"resultType":"input_required","inputRequests":` + formOnly + `}`
		}
		return `{"resultType":"complete","content":[]}`
	})
	c := newClient()
	out, err := c.Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Round == nil || out.Round.RequestState != nil {
		t.Fatalf("want a round without state, got %+v", out.Round)
	}
	if _, err := c.Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, &mcpclient.Answers{
		InputResponses: json.RawMessage(`{"who":{"action":"decline"}}`), RequestState: out.Round.RequestState,
	}); err != nil {
		t.Fatal(err)
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(peer.recorded()[1].Params, &params); err != nil {
		t.Fatal(err)
	}
	if _, ok := params["requestState"]; ok {
		t.Errorf("retry carries a requestState the server never sent: %s", params["requestState"])
	}
}

func TestResultWithoutResultTypeIsComplete(t *testing.T) {
	_, url := newRawPeer(t, func(int, json.RawMessage) string {
		return `{"content":[{"type":"text","text":"plain"}],"inputRequests":null}`
	})
	out, err := newClient().Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Round != nil || !strings.Contains(string(out.Result), "plain") {
		t.Fatalf("want a complete result, got %+v", out)
	}
}

func TestLoadShedding(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		peer, url := newRawPeer(t, func(n int, _ json.RawMessage) string {
			if n < 2 {
				return `{"resultType":"input_required","inputRequests":{},"requestState":"busy-` + string(rune('0'+n)) + `"}`
			}
			return `{"content":[{"type":"text","text":"finally"}]}`
		})
		out, err := newClient().Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out.Result), "finally") {
			t.Fatalf("got %+v", out)
		}
		calls := peer.recorded()
		if len(calls) != 3 {
			t.Fatalf("peer saw %d calls, want 3", len(calls))
		}
		if !bytes.Contains(calls[2].Params, []byte(`"requestState":"busy-1"`)) {
			t.Errorf("the shed retry did not echo the latest state: %s", calls[2].Params)
		}
	})
	t.Run("ErrStaysBusy", func(t *testing.T) {
		peer, url := newRawPeer(t, func(int, json.RawMessage) string {
			return `{"resultType":"input_required","inputRequests":{}}`
		})
		_, err := newClient().Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, nil)
		if err == nil || !strings.Contains(err.Error(), "busy") {
			t.Fatalf("err = %v, want a busy error", err)
		}
		if n := len(peer.recorded()); n != 4 {
			t.Errorf("peer saw %d calls, want 1 + 3 retries", n)
		}
	})
}

func TestInputRequestWithoutParams(t *testing.T) {
	const roots = `{"r":{"method":"roots/list"}}`
	_, url := newRawPeer(t, func(int, json.RawMessage) string {
		return `{"resultType":"input_required","inputRequests":` + roots + `}`
	})
	srv := forms(url)
	srv.Capabilities.Roots = true
	out, err := newClient().Send(ctx(t), srv, mcpclient.Request{Name: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Round.InputRequests) != roots {
		t.Errorf("inputRequests = %s", out.Round.InputRequests)
	}
	if q := out.Round.Questions; len(q) != 1 || q[0].Kind != mcpclient.KindRoots || q[0].Params != nil {
		t.Errorf("questions = %+v", q)
	}

	_, err = newClient().Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, nil)
	var undeclared *mcpclient.UndeclaredError
	if !errors.As(err, &undeclared) || undeclared.Key != "r" {
		t.Fatalf("err = %v, want UndeclaredError for r", err)
	}
}

func TestRequestStateSize(t *testing.T) {
	big := func(size int) string { return `"` + strings.Repeat("s", size) + `"` }
	for _, tc := range []struct {
		name string
		size int
		ok   bool
	}{
		{"OK1MiB", 1 << 20, true},
		{"Err20MiB", 20 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer, url := newRawPeer(t, func(n int, _ json.RawMessage) string {
				if n == 0 {
					return `{"resultType":"input_required","inputRequests":` + formOnly + `,"requestState":` + big(tc.size) + `}`
				}
				return `{"content":[]}`
			})
			c := newClient()
			out, err := c.Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, nil)
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), "requestState of") {
					t.Fatalf("err = %v, want a clear size error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, &mcpclient.Answers{
				InputResponses: json.RawMessage(`{}`), RequestState: out.Round.RequestState,
			}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(peer.recorded()[1].Body, []byte(big(tc.size))) {
				t.Error("the large state did not come back whole")
			}
		})
	}
}

func TestServerHeaders(t *testing.T) {
	peer, url := newRawPeer(t, func(int, json.RawMessage) string { return `{"content":[]}` })
	srv := forms(url)
	srv.Header = http.Header{"Authorization": {"Bearer s3cret"}}
	if _, err := newClient().Send(ctx(t), srv, mcpclient.Request{Name: "t"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := peer.header.Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization = %q", got)
	}
	if got := peer.header.Get("Mcp-Protocol-Version"); got != mcpclient.ProtocolStateless {
		t.Errorf("MCP-Protocol-Version = %q", got)
	}
}

func TestServerDown(t *testing.T) {
	_, err := newClient().Send(ctx(t), forms("http://127.0.0.1:1/mcp"), mcpclient.Request{Name: "t"}, nil)
	var unreachable *mcpclient.UnreachableError
	if !errors.As(err, &unreachable) {
		t.Fatalf("err = %v (%T), want UnreachableError", err, err)
	}
}

// TestRetryInAnotherProcess answers a round in a brand-new process, as
// happens when another instance, or this one after a restart, sends the
// retry. The second process's go-sdk state starts from scratch.
func TestRetryInAnotherProcess(t *testing.T) {
	if os.Getenv("MCPCLIENT_RETRY_FILE") != "" {
		t.Skip("helper process")
	}
	peer, url := newRawPeer(t, func(n int, params json.RawMessage) string {
		if n == 0 {
			return `{"resultType":"input_required","inputRequests":` + formOnly + `,"requestState":` + trickyState + `}`
		}
		if !bytes.Contains(params, []byte(trickyState)) {
			return `{"content":[{"type":"text","text":"state lost"}],"isError":true}`
		}
		return `{"content":[{"type":"text","text":"hello from the retry"}]}`
	})
	out, err := newClient().Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "round.json")
	saved, _ := json.Marshal(map[string]string{"url": url, "state": string(out.Round.RequestState)})
	if err := os.WriteFile(file, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRetry$", "-test.v")
	cmd.Env = append(os.Environ(), "MCPCLIENT_RETRY_FILE="+file)
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, output)
	}
	if !strings.Contains(string(output), "hello from the retry") {
		t.Fatalf("helper did not get the result:\n%s", output)
	}
	calls := peer.recorded()
	if len(calls) != 2 || bytes.Equal(calls[0].ID, calls[1].ID) {
		t.Fatalf("ids: %s and %s; want two different ids", calls[0].ID, calls[1].ID)
	}
}

func TestHelperRetry(t *testing.T) {
	file := os.Getenv("MCPCLIENT_RETRY_FILE")
	if file == "" {
		t.Skip("run by TestRetryInAnotherProcess")
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var saved map[string]string
	if err := json.Unmarshal(raw, &saved); err != nil {
		t.Fatal(err)
	}
	out, err := newClient().Send(ctx(t), forms(saved["url"]), mcpclient.Request{Name: "t"}, &mcpclient.Answers{
		InputResponses: json.RawMessage(`{"who":{"action":"accept","content":{"name":"Ada"}}}`),
		RequestState:   []byte(saved["state"]),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("result: %s", out.Result)
}
