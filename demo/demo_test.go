package demo_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clock is a settable Options.Now, safe to read from the server's goroutines.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// allModes declares form and URL elicitation.
var allModes = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
	Form: &mcp.FormElicitationCapabilities{},
	URL:  &mcp.URLElicitationCapabilities{},
}}

// MustServe mounts demo.Handler below a prefix, to show the path is free,
// and returns its endpoint.
func MustServe(tb testing.TB, opts demo.Options) string {
	tb.Helper()
	mux := http.NewServeMux()
	mux.Handle("/somewhere/deep/mcp", demo.Handler(opts))
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv.URL + "/somewhere/deep/mcp"
}

// MustConnect connects a go-sdk client that declares elicitation but leaves
// the rounds to the test.
func MustConnect(tb testing.TB, endpoint string, caps *mcp.ClientCapabilities) *mcp.ClientSession {
	tb.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1.0.0"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			tb.Error("ElicitationHandler called, but the test drives the rounds itself")
			return nil, errors.New("unexpected elicitation")
		},
		Capabilities: caps,
	})
	cs, err := client.Connect(tb.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		tb.Fatalf("Connect: %v", err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// start serves a fresh demo server on clk and connects to it.
func start(tb testing.TB, clk *clock) *mcp.ClientSession {
	tb.Helper()
	return MustConnect(tb, MustServe(tb, demo.Options{Secret: []byte("test secret"), Now: clk.Now}), allModes)
}

func call(tb testing.TB, cs *mcp.ClientSession, name string, args map[string]any, state string, responses mcp.InputResponseMap) (*mcp.CallToolResult, error) {
	tb.Helper()
	return cs.CallTool(tb.Context(), &mcp.CallToolParams{Name: name, Arguments: args, RequestState: state, InputResponses: responses})
}

func MustCall(tb testing.TB, cs *mcp.ClientSession, name string, args map[string]any, state string, responses mcp.InputResponseMap) *mcp.CallToolResult {
	tb.Helper()
	res, err := call(tb, cs, name, args, state, responses)
	if err != nil {
		tb.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

// MustAsk checks that res asks exactly the given keys, each as an elicitation.
func MustAsk(tb testing.TB, res *mcp.CallToolResult, keys ...string) map[string]*mcp.ElicitParams {
	tb.Helper()
	if !res.NeedsInput() {
		tb.Fatalf("result does not need input: %s", textOf(res))
	}
	if res.RequestState == "" {
		tb.Fatal("input_required result has no requestState")
	}
	got := map[string]*mcp.ElicitParams{}
	var gotKeys []string
	for k, ir := range res.InputRequests {
		ep, ok := ir.(*mcp.ElicitParams)
		if !ok {
			tb.Fatalf("inputRequests[%q] is %T, want elicitation", k, ir)
		}
		got[k] = ep
		gotKeys = append(gotKeys, k)
	}
	slices.Sort(gotKeys)
	slices.Sort(keys)
	if !slices.Equal(gotKeys, keys) {
		tb.Fatalf("inputRequests keys = %v, want %v", gotKeys, keys)
	}
	return got
}

// MustFinish checks that res is a final result and returns its text.
func MustFinish(tb testing.TB, res *mcp.CallToolResult) string {
	tb.Helper()
	if res.NeedsInput() {
		tb.Fatalf("result still needs input: %v", res.InputRequests)
	}
	if res.RequestState != "" {
		tb.Errorf("final result carries requestState %q", res.RequestState)
	}
	return textOf(res)
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// schemaOf returns a form request's requestedSchema as plain JSON values.
func schemaOf(tb testing.TB, ep *mcp.ElicitParams) map[string]any {
	tb.Helper()
	if ep.Mode != "form" {
		tb.Fatalf("mode = %q, want form", ep.Mode)
	}
	var m map[string]any
	b, err := json.Marshal(ep.RequestedSchema)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		tb.Fatalf("requestedSchema: %v", err)
	}
	return m
}

// prop returns one property of a requested schema.
func prop(tb testing.TB, schema map[string]any, name string) map[string]any {
	tb.Helper()
	p, ok := schema["properties"].(map[string]any)[name].(map[string]any)
	if !ok {
		tb.Fatalf("schema has no property %q: %v", name, schema)
	}
	return p
}

func consts(list any) []string {
	var out []string
	for _, o := range list.([]any) {
		out = append(out, o.(map[string]any)["const"].(string))
	}
	return out
}

func accept(content map[string]any) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

func decline() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }
func cancel() *mcp.ElicitResult  { return &mcp.ElicitResult{Action: "cancel"} }

func TestConnect(t *testing.T) {
	cs := start(t, newClock())
	init := cs.InitializeResult()
	if init == nil {
		t.Fatal("no InitializeResult")
	}
	if init.ProtocolVersion != "2026-07-28" {
		t.Errorf("protocol version = %q, want 2026-07-28", init.ProtocolVersion)
	}
	if init.ServerInfo == nil || init.ServerInfo.Name != "rounds-demo" {
		t.Errorf("server info = %+v", init.ServerInfo)
	}
	if init.Capabilities == nil || init.Capabilities.Tools == nil {
		t.Errorf("server does not declare tools: %+v", init.Capabilities)
	}
}

func TestToolsList(t *testing.T) {
	cs := start(t, newClock())
	want := []string{"approve", "book_flight", "collect_user_info", "confirm_delete", "connect_account",
		"create_task", "current_time", "schedule", "select_tags", "show_roots", "write_haiku"}
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Title == "" || tool.Description == "" {
			t.Errorf("%s: title %q, description %q", tool.Name, tool.Title, tool.Description)
		}
		schema, ok := tool.InputSchema.(map[string]any)
		if !ok || schema["type"] != "object" {
			t.Errorf("%s: inputSchema = %#v, want an object schema", tool.Name, tool.InputSchema)
		}
		if _, ok := schema["properties"].(map[string]any); !ok {
			t.Errorf("%s: inputSchema has no properties object", tool.Name)
		}
		if tool.Name == "confirm_delete" && !reflect.DeepEqual(schema["required"], []any{"path"}) {
			t.Errorf("confirm_delete requires %v, want [path]", schema["required"])
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

func TestCurrentTime(t *testing.T) {
	cs := start(t, newClock())
	res := MustCall(t, cs, "current_time", nil, "", nil)
	if got, want := MustFinish(t, res), "The time is 2026-07-28T10:00:00Z"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

func TestBookFlight(t *testing.T) {
	cs := start(t, newClock())

	res := MustCall(t, cs, "book_flight", nil, "", nil)
	asks := MustAsk(t, res, "trip", "party")
	trip := schemaOf(t, asks["trip"])
	if !reflect.DeepEqual(trip["required"], []any{"destination", "date"}) {
		t.Errorf("trip requires %v", trip["required"])
	}
	if prop(t, trip, "destination")["type"] != "string" || prop(t, trip, "date")["format"] != "date" {
		t.Errorf("trip schema = %v", trip)
	}
	passengers := prop(t, schemaOf(t, asks["party"]), "passengers")
	if passengers["type"] != "integer" || passengers["minimum"] != 1.0 || passengers["maximum"] != 9.0 || passengers["default"] != 1.0 {
		t.Errorf("passengers = %v", passengers)
	}
	for k, ep := range asks {
		if ep.Message == "" {
			t.Errorf("%s has no message", k)
		}
	}

	first := res.RequestState
	res = MustCall(t, cs, "book_flight", nil, first, mcp.InputResponseMap{
		"trip":  accept(map[string]any{"destination": "Lisbon", "date": "2026-09-01"}),
		"party": accept(map[string]any{"passengers": 2}),
	})
	asks = MustAsk(t, res, "seat")
	class := prop(t, schemaOf(t, asks["seat"]), "class")
	if got := consts(class["oneOf"]); !slices.Equal(got, []string{"economy", "premium", "business"}) {
		t.Errorf("class options = %v", got)
	}
	if !strings.Contains(asks["seat"].Message, "2 passengers to Lisbon on 2026-09-01") {
		t.Errorf("round 2 message %q does not recall round 1", asks["seat"].Message)
	}
	if res.RequestState == first {
		t.Error("round 2 reused round 1's requestState")
	}

	res = MustCall(t, cs, "book_flight", nil, res.RequestState, mcp.InputResponseMap{
		"seat": accept(map[string]any{"class": "premium"}),
	})
	if got, want := MustFinish(t, res), "Booked 2 passengers to Lisbon on 2026-09-01, Premium economy class."; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	want := map[string]any{"destination": "Lisbon", "date": "2026-09-01", "passengers": 2.0, "class": "premium"}
	if !reflect.DeepEqual(res.StructuredContent, want) {
		t.Errorf("structuredContent = %#v, want %#v", res.StructuredContent, want)
	}
}

func TestBookFlightAsksAgain(t *testing.T) {
	goodTrip := accept(map[string]any{"destination": "Lisbon", "date": "2026-09-01"})
	tests := []struct {
		name      string
		responses mcp.InputResponseMap
		ask       string // the only key asked again
		message   string // what the new message must say
	}{
		{"MissingAnswer", mcp.InputResponseMap{"trip": goodTrip}, "party", "How many"},
		{"TooManyPassengers", mcp.InputResponseMap{"trip": goodTrip, "party": accept(map[string]any{"passengers": 12})},
			"party", "Passengers must be at most 9"},
		{"FractionalPassengers", mcp.InputResponseMap{"trip": goodTrip, "party": accept(map[string]any{"passengers": 1.5})},
			"party", "Passengers must be a whole number"},
		{"RequiredMissing", mcp.InputResponseMap{"trip": accept(map[string]any{"destination": "Lisbon"}), "party": accept(map[string]any{"passengers": 2})},
			"trip", "Departure date is required"},
		{"BadDate", mcp.InputResponseMap{"trip": accept(map[string]any{"destination": "Lisbon", "date": "1 Sept"}), "party": accept(map[string]any{"passengers": 2})},
			"trip", "Departure date must be a date"},
		{"PastDate", mcp.InputResponseMap{"trip": accept(map[string]any{"destination": "Lisbon", "date": "2026-07-27"}), "party": accept(map[string]any{"passengers": 2})},
			"trip", "Departure date must be today or later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := start(t, newClock())
			state := MustCall(t, cs, "book_flight", nil, "", nil).RequestState
			res := MustCall(t, cs, "book_flight", nil, state, tt.responses)
			asks := MustAsk(t, res, tt.ask)
			if !strings.Contains(asks[tt.ask].Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", asks[tt.ask].Message, tt.message)
			}
			// Answering just what was asked again completes round 1: the
			// other answer was kept in the requestState.
			fix := map[string]*mcp.ElicitResult{"trip": goodTrip, "party": accept(map[string]any{"passengers": 3})}
			res = MustCall(t, cs, "book_flight", nil, res.RequestState, mcp.InputResponseMap{tt.ask: fix[tt.ask]})
			seat := MustAsk(t, res, "seat")["seat"]
			if !strings.Contains(seat.Message, "to Lisbon on 2026-09-01") {
				t.Errorf("round 2 message %q lost round 1's answers", seat.Message)
			}
		})
	}
}

func TestBookFlightIgnoresResponsesWithoutState(t *testing.T) {
	cs := start(t, newClock())
	res := MustCall(t, cs, "book_flight", nil, "", mcp.InputResponseMap{
		"trip":  accept(map[string]any{"destination": "Lisbon", "date": "2026-09-01"}),
		"party": accept(map[string]any{"passengers": 2}),
	})
	MustAsk(t, res, "trip", "party")
}

func TestBookFlightStops(t *testing.T) {
	cs := start(t, newClock())
	state := MustCall(t, cs, "book_flight", nil, "", nil).RequestState

	res := MustCall(t, cs, "book_flight", nil, state, mcp.InputResponseMap{
		"trip":  decline(),
		"party": accept(map[string]any{"passengers": 1}),
	})
	if got, want := MustFinish(t, res), "Booking declined: no flight was booked."; got != want {
		t.Errorf("decline in round 1: %q, want %q", got, want)
	}

	res = MustCall(t, cs, "book_flight", nil, state, mcp.InputResponseMap{
		"trip":  accept(map[string]any{"destination": "Oslo", "date": "2026-08-01"}),
		"party": accept(map[string]any{"passengers": 1}),
	})
	MustAsk(t, res, "seat")
	res = MustCall(t, cs, "book_flight", nil, res.RequestState, mcp.InputResponseMap{"seat": cancel()})
	if got, want := MustFinish(t, res), "Booking cancelled: no flight was booked."; got != want {
		t.Errorf("cancel in round 2: %q, want %q", got, want)
	}
	if res.StructuredContent != nil {
		t.Errorf("cancelled booking has structuredContent %v", res.StructuredContent)
	}
}

func TestConfirmDelete(t *testing.T) {
	tests := []struct {
		name     string
		response *mcp.ElicitResult
		want     string
	}{
		{"AcceptYes", accept(map[string]any{"confirm": true}), "Deleted /tmp/report.txt"},
		{"AcceptNo", accept(map[string]any{"confirm": false}), "Kept /tmp/report.txt"},
		{"Decline", decline(), "Kept /tmp/report.txt"},
		{"Cancel", cancel(), "Cancelled"},
	}
	cs := start(t, newClock())
	args := map[string]any{"path": "/tmp/report.txt"}
	res := MustCall(t, cs, "confirm_delete", args, "", nil)
	ask := MustAsk(t, res, "confirm")["confirm"]
	if !strings.Contains(ask.Message, "/tmp/report.txt") {
		t.Errorf("message %q does not name the file", ask.Message)
	}
	schema := schemaOf(t, ask)
	confirm := prop(t, schema, "confirm")
	if confirm["type"] != "boolean" || confirm["default"] != false || !reflect.DeepEqual(schema["required"], []any{"confirm"}) {
		t.Errorf("schema = %v", schema)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := MustCall(t, cs, "confirm_delete", args, res.RequestState, mcp.InputResponseMap{"confirm": tt.response})
			if got := MustFinish(t, done); got != tt.want {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestConfirmDeleteBadArguments(t *testing.T) {
	cs := start(t, newClock())
	res := MustCall(t, cs, "confirm_delete", map[string]any{}, "", nil)
	if !res.IsError || !strings.Contains(textOf(res), "Path is required") {
		t.Errorf("result = %q (isError %v), want a tool error about the path", textOf(res), res.IsError)
	}
}

// wantInvalidParams checks err is a JSON-RPC invalid-params error saying why.
func wantInvalidParams(tb testing.TB, err error, why string) {
	tb.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		tb.Fatalf("err = %v, want a JSON-RPC error", err)
	}
	if werr.Code != jsonrpc.CodeInvalidParams {
		tb.Errorf("code = %d, want %d (invalid params)", werr.Code, jsonrpc.CodeInvalidParams)
	}
	if !strings.Contains(werr.Message, why) {
		tb.Errorf("message = %q, want it to contain %q", werr.Message, why)
	}
}

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
			wantInvalidParams(t, err, "invalid requestState: "+tt.why)
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
	wantInvalidParams(t, err, "invalid requestState: expired")
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

func TestCollectUserInfo(t *testing.T) {
	cs := start(t, newClock())
	res := MustCall(t, cs, "collect_user_info", nil, "", nil)
	schema := schemaOf(t, MustAsk(t, res, "user")["user"])
	age := prop(t, schema, "age")
	if prop(t, schema, "name")["type"] != "string" || age["type"] != "integer" || age["minimum"] != 0.0 || age["maximum"] != 150.0 {
		t.Errorf("schema = %v", schema)
	}
	tests := []struct {
		name    string
		content map[string]any
		want    string // final text, or the re-ask message
		again   bool
	}{
		{"NameAndAge", map[string]any{"name": "Ada", "age": 36}, "Hello, Ada! You are 36.", false},
		{"NameOnly", map[string]any{"name": "Ada"}, "Hello, Ada!", false},
		{"TooOld", map[string]any{"name": "Ada", "age": 200}, "Please try again: Age must be at most 150.", true},
		{"NoName", map[string]any{"name": "  ", "age": 3}, "Name is required", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := MustCall(t, cs, "collect_user_info", nil, res.RequestState, mcp.InputResponseMap{"user": accept(tt.content)})
			if tt.again {
				if msg := MustAsk(t, next, "user")["user"].Message; !strings.Contains(msg, tt.want) {
					t.Errorf("message = %q, want %q", msg, tt.want)
				}
				return
			}
			if got := MustFinish(t, next); got != tt.want {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCreateTask(t *testing.T) {
	cs := start(t, newClock())
	res := MustCall(t, cs, "create_task", nil, "", nil)
	schema := schemaOf(t, MustAsk(t, res, "task")["task"])
	for name, want := range map[string]map[string]any{
		"title":       {"type": "string", "minLength": 3.0, "maxLength": 80.0},
		"description": {"type": "string"},
		"due":         {"type": "string", "format": "date"},
		"priority":    {"type": "string", "enum": []any{"low", "medium", "high"}, "default": "medium"},
		"estimate":    {"type": "number", "default": 1.5},
		"points":      {"type": "integer", "default": 3.0},
		"urgent":      {"type": "boolean", "default": false},
		"notify":      {"type": "string", "format": "email"},
		"link":        {"type": "string", "format": "uri"},
		"tags":        {"type": "array", "default": []any{"feature"}},
	} {
		p := prop(t, schema, name)
		for k, v := range want {
			if !reflect.DeepEqual(p[k], v) {
				t.Errorf("%s.%s = %#v, want %#v", name, k, p[k], v)
			}
		}
	}
	if items := prop(t, schema, "tags")["items"].(map[string]any); items["type"] != "string" || len(items["enum"].([]any)) == 0 {
		t.Errorf("tags items = %v", items)
	}

	t.Run("Invalid", func(t *testing.T) {
		again := MustCall(t, cs, "create_task", nil, res.RequestState, mcp.InputResponseMap{"task": accept(map[string]any{
			"title": "ab", "priority": "urgent", "estimate": "lots", "points": 2.5,
			"notify": "nobody", "link": "example.com", "due": "tomorrow", "tags": []any{"bug", "nope"},
		})})
		msg := MustAsk(t, again, "task")["task"].Message
		for _, want := range []string{
			"Title must be at least 3 characters", "Priority must be one of low, medium, high",
			"Estimate (hours) must be a number", "Story points must be a whole number",
			"Notify (email) must be an email address", "Link must be a full URL", "Due date must be a date",
			"Tags may only contain bug, feature, docs, chore",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q lacks %q", msg, want)
			}
		}
	})
	t.Run("Valid", func(t *testing.T) {
		done := MustCall(t, cs, "create_task", nil, res.RequestState, mcp.InputResponseMap{"task": accept(map[string]any{
			"title": "Write docs", "priority": "high", "notify": "ada@example.com", "link": "https://example.com/x",
			"due": "2026-08-01", "tags": []any{"docs", "chore"}, "link_extra": "ignored",
		})})
		if got, want := MustFinish(t, done), `Created task "Write docs" with high priority.`; got != want {
			t.Errorf("text = %q, want %q", got, want)
		}
		want := map[string]any{"title": "Write docs", "priority": "high", "notify": "ada@example.com",
			"link": "https://example.com/x", "due": "2026-08-01", "tags": []any{"docs", "chore"},
			"estimate": 1.5, "points": 3.0, "urgent": false} // defaults filled in, unknown field dropped
		if !reflect.DeepEqual(done.StructuredContent, want) {
			t.Errorf("structuredContent = %#v, want %#v", done.StructuredContent, want)
		}
	})
}

func TestSelectTags(t *testing.T) {
	cs := start(t, newClock())
	res := MustCall(t, cs, "select_tags", nil, "", nil)
	tags := prop(t, schemaOf(t, MustAsk(t, res, "tags")["tags"]), "tags")
	if tags["minItems"] != 1.0 || tags["maxItems"] != 3.0 || !reflect.DeepEqual(tags["default"], []any{"feature"}) {
		t.Errorf("tags = %v", tags)
	}
	if got := consts(tags["items"].(map[string]any)["anyOf"]); !slices.Equal(got, []string{"bug", "feature", "docs", "ux"}) {
		t.Errorf("options = %v", got)
	}
	tests := []struct {
		name  string
		tags  []any
		want  string
		again bool
	}{
		{"Two", []any{"bug", "docs"}, "Tagged: Bug, Documentation", false},
		{"None", []any{}, "Tags needs at least 1 choice", true},
		{"Four", []any{"bug", "docs", "ux", "feature"}, "Tags allows at most 3 choices", true},
		{"Repeated", []any{"bug", "bug"}, "Tags must not repeat a choice", true},
		{"Unknown", []any{"bugs"}, "Tags may only contain Bug, Feature, Documentation, User experience", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := MustCall(t, cs, "select_tags", nil, res.RequestState, mcp.InputResponseMap{"tags": accept(map[string]any{"tags": tt.tags})})
			if tt.again {
				if msg := MustAsk(t, next, "tags")["tags"].Message; !strings.Contains(msg, tt.want) {
					t.Errorf("message = %q, want %q", msg, tt.want)
				}
				return
			}
			if got := MustFinish(t, next); got != tt.want {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSchedule(t *testing.T) {
	cs := start(t, newClock())
	res := MustCall(t, cs, "schedule", nil, "", nil)
	schema := schemaOf(t, MustAsk(t, res, "when")["when"])
	if prop(t, schema, "date")["format"] != "date" || prop(t, schema, "reminder")["format"] != "date-time" {
		t.Errorf("schema = %v", schema)
	}
	again := MustCall(t, cs, "schedule", nil, res.RequestState, mcp.InputResponseMap{"when": accept(map[string]any{
		"date": "2026-08-01", "reminder": "2026-07-31 09:00"})})
	if msg := MustAsk(t, again, "when")["when"].Message; !strings.Contains(msg, "Remind me at must be a date and time") {
		t.Errorf("message = %q", msg)
	}
	done := MustCall(t, cs, "schedule", nil, res.RequestState, mcp.InputResponseMap{"when": accept(map[string]any{
		"date": "2026-08-01", "reminder": "2026-07-31T09:00:00+02:00"})})
	if got, want := MustFinish(t, done), "Scheduled for 2026-08-01, reminder at 2026-07-31T09:00:00+02:00."; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

func TestConnectAccount(t *testing.T) {
	cs := start(t, newClock())
	res := MustCall(t, cs, "connect_account", nil, "", nil)
	ask := MustAsk(t, res, "connect")["connect"]
	if ask.Mode != "url" || ask.Message == "" || ask.ElicitationID == "" || ask.RequestedSchema != nil {
		t.Errorf("request = %+v, want URL mode with message and elicitationId", ask)
	}
	session, ok := strings.CutPrefix(ask.URL, "https://example.com/connect?session=")
	if !ok || session == "" {
		t.Errorf("url = %q", ask.URL)
	}
	if again := MustAsk(t, MustCall(t, cs, "connect_account", nil, "", nil), "connect")["connect"]; again.URL == ask.URL || again.ElicitationID == ask.ElicitationID {
		t.Errorf("two calls share url %q or elicitationId %q", ask.URL, ask.ElicitationID)
	}
	for response, want := range map[*mcp.ElicitResult]string{accept(nil): "Connected", decline(): "Not connected", cancel(): "Cancelled"} {
		done := MustCall(t, cs, "connect_account", nil, res.RequestState, mcp.InputResponseMap{"connect": response})
		if got := MustFinish(t, done); got != want {
			t.Errorf("%s: %q, want %q", response.Action, got, want)
		}
	}
}

func TestApprove(t *testing.T) {
	cs := start(t, newClock())
	res := MustCall(t, cs, "approve", nil, "", nil)
	schema := schemaOf(t, MustAsk(t, res, "approval")["approval"])
	if !reflect.DeepEqual(schema, map[string]any{"type": "object", "properties": map[string]any{}}) {
		t.Errorf("schema = %v, want an empty object", schema)
	}
	for response, want := range map[*mcp.ElicitResult]string{accept(map[string]any{}): "Approved", decline(): "Declined", cancel(): "Cancelled"} {
		done := MustCall(t, cs, "approve", nil, res.RequestState, mcp.InputResponseMap{"approval": response})
		if got := MustFinish(t, done); got != want {
			t.Errorf("%s: %q, want %q", response.Action, got, want)
		}
	}
}

// TestAutomaticClient lets the go-sdk client run the rounds itself, which
// also checks every requested schema against the SDK's elicitation rules.
func TestAutomaticClient(t *testing.T) {
	answers := map[string]any{
		"destination": "Lisbon", "date": "2026-09-01", "passengers": 2, "class": "business",
		"confirm": true, "name": "Ada", "age": 36, "title": "Write docs", "priority": "low",
		"tags": []any{"bug"}, "reminder": "2026-08-31T09:00:00Z",
	}
	var mu sync.Mutex
	var asked []string
	client := mcp.NewClient(&mcp.Implementation{Name: "auto", Version: "1"}, &mcp.ClientOptions{
		Capabilities: allModes,
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			if req.Params.Mode == "url" {
				return accept(nil), nil
			}
			content := map[string]any{}
			props, _ := req.Params.RequestedSchema.(map[string]any)["properties"].(map[string]any)
			for name := range props {
				if v, ok := answers[name]; ok {
					content[name] = v
				}
			}
			return accept(content), nil
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: MustServe(t, demo.Options{Now: newClock().Now})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"book_flight", nil, "Booked 2 passengers to Lisbon on 2026-09-01, Business class."},
		{"confirm_delete", map[string]any{"path": "/x"}, "Deleted /x"},
		{"collect_user_info", nil, "Hello, Ada! You are 36."},
		{"create_task", nil, `Created task "Write docs" with low priority.`},
		{"select_tags", nil, "Tagged: Bug"},
		{"schedule", nil, "Scheduled for 2026-09-01, reminder at 2026-08-31T09:00:00Z."},
		{"connect_account", nil, "Connected"},
		{"approve", nil, "Approved"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if got := MustFinish(t, res); got != tt.want {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
		})
	}
	if len(asked) != 10 { // book_flight asks three questions, the others one each
		t.Errorf("client answered %d questions, want 10: %q", len(asked), asked)
	}
}
