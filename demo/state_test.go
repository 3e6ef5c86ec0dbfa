package demo_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRequestStateRejected(t *testing.T) {
	cs := start(t, newClock())
	args := map[string]any{"path": "/a"}
	state := MustCall(t, cs, "confirm_delete", args, "", nil).RequestState
	yes := mcp.InputResponseMap{"confirm": accept(map[string]any{"confirm": true})}

	payload, mac, ok := strings.Cut(state, ".")
	if !ok {
		t.Fatalf("requestState %q is not payload.mac", state)
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || !strings.Contains(string(raw), `"tool":"confirm_delete"`) {
		t.Fatalf("payload %q (%v) does not name the tool", raw, err)
	}
	// A forged payload that claims another tool, under the original MAC.
	forged := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"tool":"confirm_delete"`, `"tool":"approve"`, 1))) + "." + mac
	flipped := payload + "." + flipFirst(mac)
	other := MustConnect(t, MustServe(t, demo.Options{Secret: []byte("another secret")}), allModes)

	tests := []struct {
		name  string
		cs    *mcp.ClientSession
		tool  string
		args  map[string]any
		state string
		why   string
	}{
		{"ForgedPayload", cs, "approve", nil, forged, "signature does not match"},
		{"TamperedSignature", cs, "confirm_delete", args, flipped, "signature does not match"},
		{"Garbage", cs, "confirm_delete", args, "not-a-state", "malformed"},
		{"OtherServer", other, "confirm_delete", args, state, "signature does not match"},
		{"OtherTool", cs, "approve", nil, state, `issued for tool "confirm_delete", not "approve"`},
		{"OtherArguments", cs, "confirm_delete", map[string]any{"path": "/b"}, state, "issued for a call with different arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call(t, tt.cs, tt.tool, tt.args, tt.state, yes)
			wantStateRefused(t, err, "invalid requestState: "+tt.why)
		})
	}

	// The untouched state still works, so the failures above are the tampering.
	if got := MustFinish(t, MustCall(t, cs, "confirm_delete", args, state, yes)); got != "Deleted /a" {
		t.Errorf("valid state: %q, want %q", got, "Deleted /a")
	}
}

// flipFirst changes the first character of a base64url string.
func flipFirst(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

func TestRequestStateExpires(t *testing.T) {
	clk := newClock()
	cs := MustConnect(t, MustServe(t, demo.Options{Secret: []byte("s"), StateTTL: 10 * time.Minute, Now: clk.Now}), allModes)
	args := map[string]any{"path": "/a"}
	yes := mcp.InputResponseMap{"confirm": accept(map[string]any{"confirm": true})}
	state := MustCall(t, cs, "confirm_delete", args, "", nil).RequestState

	clk.Add(9 * time.Minute)
	if got := MustFinish(t, MustCall(t, cs, "confirm_delete", args, state, yes)); got != "Deleted /a" {
		t.Errorf("within TTL: %q", got)
	}
	clk.Add(time.Minute)
	_, err := call(t, cs, "confirm_delete", args, state, yes)
	wantStateRefused(t, err, "invalid requestState: expired")
}

func TestDefaultTTLIsOneHour(t *testing.T) {
	clk := newClock()
	cs := MustConnect(t, MustServe(t, demo.Options{Now: clk.Now}), allModes)
	state := MustCall(t, cs, "approve", nil, "", nil).RequestState
	clk.Add(59 * time.Minute)
	if got := MustFinish(t, MustCall(t, cs, "approve", nil, state, mcp.InputResponseMap{"approval": accept(nil)})); got != "Approved" {
		t.Errorf("after 59m: %q", got)
	}
	clk.Add(time.Minute)
	_, err := call(t, cs, "approve", nil, state, mcp.InputResponseMap{"approval": accept(nil)})
	wantInvalidParams(t, err, "expired")
}

func TestMalformedInputResponses(t *testing.T) {
	cs := start(t, newClock())
	state := MustCall(t, cs, "approve", nil, "", nil).RequestState
	_, err := call(t, cs, "approve", nil, state, mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: "maybe"}})
	wantInvalidParams(t, err, `unknown action "maybe"`)
	_, err = call(t, cs, "approve", nil, state, mcp.InputResponseMap{"approval": &mcp.ListRootsResult{Roots: []*mcp.Root{}}})
	wantInvalidParams(t, err, "not an elicitation result")
}

func TestMissingCapability(t *testing.T) {
	endpoint := MustServe(t, demo.Options{})
	noElicitation := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{}, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	plain, err := noElicitation.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	formOnly := MustConnect(t, endpoint, &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}})

	tests := []struct {
		name string
		cs   *mcp.ClientSession
		tool string
		mode string
	}{
		{"NoElicitation", plain, "approve", "form"},
		{"FormOnlyAskedURL", formOnly, "connect_account", "url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call(t, tt.cs, tt.tool, nil, "", nil)
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != mcp.CodeMissingRequiredClientCapabilities {
				t.Fatalf("err = %v, want code %d", err, mcp.CodeMissingRequiredClientCapabilities)
			}
			if !strings.Contains(string(werr.Data), `"elicitation":{"`+tt.mode+`":{}}`) {
				t.Errorf("data = %s, want elicitation %s required", werr.Data, tt.mode)
			}
		})
	}
	// A tool that asks nothing still works for them.
	if got := MustFinish(t, MustCall(t, plain, "current_time", nil, "", nil)); !strings.HasPrefix(got, "The time is ") {
		t.Errorf("current_time: %q", got)
	}
	// Form-only clients still get form questions.
	MustAsk(t, MustCall(t, formOnly, "approve", nil, "", nil), "approval")
}

// wantStateRefused checks a refused requestState: invalid params, the
// reason mcp 2.0 gives in data (so a client asks afresh), and why.
func wantStateRefused(tb testing.TB, err error, why string) {
	tb.Helper()
	wantInvalidParams(tb, err, why)
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && string(werr.Data) != `{"reason":"invalid_request_state"}` {
		tb.Errorf("data = %s, want the reason invalid_request_state", werr.Data)
	}
}
