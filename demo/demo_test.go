package demo_test

import (
	"context"
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
		"create_task", "current_time", "deploy_release", "generate_report", "schedule", "select_tags", "show_roots", "write_haiku"}
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
