package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/mcptest"
)

// heldServer is a server pinned to 2025-11-25 whose questions answer
// returns, recording the params each question came with.
func heldServer(url string, asked *[]json.RawMessage, answer string) mcpclient.Server {
	srv := forms(url)
	srv.Protocol = mcpclient.ProtocolHandshake
	srv.Held = &mcpclient.Held{
		Sending: func(context.Context) error { return nil },
		Ask: func(_ context.Context, q mcpclient.Question) (json.RawMessage, error) {
			*asked = append(*asked, q.Params)
			return json.RawMessage(answer), nil
		},
	}
	return srv
}

// answerSent is the body of our answer to the server's question id.
func answerSent(t *testing.T, f *mcptest.Fake, id string) string {
	t.Helper()
	for _, e := range f.Exchanges() {
		if e.RPC == "" && e.Method == "POST" && bytes.Contains(e.Body, []byte(`"id":`+id+`,`)) {
			return string(e.Body)
		}
	}
	t.Fatalf("no answer to the server's request %s", id)
	return ""
}

// TestFastMCPHeld: FastMCP 4 pinned to 2025-11-25. The schema reaches the
// person with its properties in the server's order, the untitled
// multi-select is asked (not refused), and each answer goes back as given.
func TestFastMCPHeld(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tool, answer, schema, result string
	}{
		{"collect_user_info", `{"action":"accept","content":{"name":"Ada","age":36}}`,
			`"requestedSchema":{"properties":{"name":{"title":"Name","type":"string"},"age":{"title":"Age","type":"integer"}},"required":["name","age"],"title":"UserInfo","type":"object"}`,
			"Hello Ada, you are 36 years old"},
		{"select_tags", `{"action":"accept","content":{"value":["bug","documentation"]}}`,
			`"requestedSchema":{"type":"object","properties":{"value":{"type":"array","items":{"enum":["bug","feature","documentation"]}}},"required":["value"]}`,
			"Selected tags: bug, documentation"},
		{"get_user_name", `{"action":"decline"}`,
			`"requestedSchema":{"properties":{"value":{"title":"Value","type":"string"}},"required":["value"],"type":"object"}`,
			"Information not provided"},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			t.Parallel()
			f := mcptest.NewFake(t, mcptest.FastMCP4)
			var asked []json.RawMessage
			out, err := newClient().Send(ctx(t), heldServer(f.URL, &asked, tt.answer), mcpclient.Request{Name: tt.tool}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(asked) != 1 || !bytes.Contains(asked[0], []byte(tt.schema)) {
				t.Fatalf("asked %s, want the schema as sent: %s", asked, tt.schema)
			}
			if !bytes.HasPrefix(asked[0], []byte(`{"mode":"form","message":`)) || !bytes.HasSuffix(asked[0], []byte(`,"_meta":{}}`)) {
				t.Errorf("params = %s, want them byte for byte", asked[0])
			}
			if got, want := answerSent(t, f, "1"), `{"jsonrpc":"2.0","id":1,"result":`+tt.answer+`}`; got != want {
				t.Errorf("answer on the wire = %s, want %s", got, want)
			}
			if !strings.Contains(string(out.Result), `"text":"`+tt.result+`"`) {
				t.Errorf("result = %s, want %q", out.Result, tt.result)
			}
			if v := f.Violations(); len(v) > 0 {
				t.Errorf("Rounds sent what the real client never did: %v", v)
			}
		})
	}
}

// TestFastMCPBatchedOrder: a 2026-07-28 round's questions keep the server's
// order, and the sealed requestState goes back as it came.
func TestFastMCPBatchedOrder(t *testing.T) {
	t.Parallel()
	f := mcptest.NewFake(t, mcptest.FastMCP4)
	c := newClient()
	out, err := c.Send(ctx(t), forms(f.URL), mcpclient.Request{Name: "book_trip_batched"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Round == nil || len(out.Round.Questions) != 3 {
		t.Fatalf("outcome = %+v", out)
	}
	var keys []string
	for _, q := range out.Round.Questions {
		keys = append(keys, q.Key)
	}
	if got := strings.Join(keys, ","); got != "destination,travellers,cabin" {
		t.Errorf("questions in order %s, want destination,travellers,cabin", got)
	}
	answers := `{"destination":{"action":"accept","content":{"value":"Porto"}},"travellers":{"action":"accept","content":{"value":2}},"cabin":{"action":"accept","content":{"value":"first"}}}`
	out, err = c.Send(ctx(t), forms(f.URL), mcpclient.Request{Name: "book_trip_batched"},
		&mcpclient.Answers{InputResponses: json.RawMessage(answers), RequestState: out.Round.RequestState})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out.Result), "Booked 2 to Porto, first") {
		t.Errorf("result = %s", out.Result)
	}
	if v := f.Violations(); len(v) > 0 {
		t.Errorf("Rounds sent what the real client never did: %v", v)
	}
}

// TestPythonSDKRefusals: a server that answered with an HTTP error is
// reported with its status and its own message, not as unreachable.
func TestPythonSDKRefusals(t *testing.T) {
	t.Parallel()
	f := mcptest.NewFake(t, mcptest.PythonSDK2)
	_, err := newClient().Send(ctx(t), forms(f.URL), mcpclient.Request{Name: "delete_file", Arguments: json.RawMessage(`{"filename":"notes.txt"}`)}, nil)
	var refused *mcpclient.HTTPError
	if !errors.As(err, &refused) {
		t.Fatalf("err = %v (%T), want an HTTPError", err, err)
	}
	if refused.Status != 400 || refused.Code != -32600 ||
		refused.Message != "Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests." {
		t.Errorf("refusal = %+v", refused)
	}
	var unreachable *mcpclient.UnreachableError
	if errors.As(err, &unreachable) {
		t.Error("a server that answered is called unreachable")
	}
}

// TestPythonSDK1Auto: mcp 1.29.0 refuses server/discover with a 400, so
// auto falls back to the handshake; its question (id 0, its own key order)
// is held and answered.
func TestPythonSDK1Auto(t *testing.T) {
	t.Parallel()
	f := mcptest.NewFake(t, mcptest.PythonSDK1)
	c := newClient()
	var asked []json.RawMessage
	srv := heldServer(f.URL, &asked, `{"action":"accept","content":{"confirm":true}}`)
	srv.Protocol = ""
	tools, err := c.ListTools(ctx(t), srv)
	if err != nil {
		t.Fatal(err)
	}
	if tools.Protocol != mcpclient.ProtocolHandshake || len(tools.Tools) != 1 || tools.Tools[0].Name != "delete_file" {
		t.Fatalf("tools = %+v", tools)
	}
	out, err := c.Send(ctx(t), srv, mcpclient.Request{Name: "delete_file", Arguments: json.RawMessage(`{"filename":"notes.txt"}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out.Result), `Deleted 'notes.txt'.`) {
		t.Errorf("result = %s", out.Result)
	}
	if len(asked) != 1 || !strings.Contains(string(asked[0]), `"message":"Really delete 'notes.txt'?"`) {
		t.Errorf("asked = %s", asked)
	}
	if got := answerSent(t, f, "0"); got != `{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"confirm":true}}}` {
		t.Errorf("answer on the wire = %s", got)
	}
	if v := f.Violations(); len(v) > 0 {
		t.Errorf("Rounds sent what the real client never did: %v", v)
	}
}
