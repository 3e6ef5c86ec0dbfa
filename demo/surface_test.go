package demo_test

import (
	"bytes"
	"errors"
	"image/png"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/demo"
)

// everything declares every kind of input request.
var everything = &mcp.ClientCapabilities{
	Elicitation: allModes.Elicitation,
	Sampling:    &mcp.SamplingCapabilities{},
	RootsV2:     &mcp.RootCapabilities{},
}

func startAll(t *testing.T) *mcp.ClientSession {
	t.Helper()
	return MustConnect(t, MustServe(t, demo.Options{Secret: []byte("test secret"), Now: newClock().Now}), everything)
}

func TestTripPlanPrompt(t *testing.T) {
	cs := startAll(t)
	get := func(args map[string]string, state string, responses mcp.InputResponseMap) *mcp.GetPromptResult {
		t.Helper()
		res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "trip_plan", Arguments: args, RequestState: state, InputResponses: responses})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	args := map[string]string{"destination": "Porto"}
	first := get(args, "", nil)
	ep, ok := first.InputRequests["trip"].(*mcp.ElicitParams)
	if !ok || first.RequestState == "" || !strings.Contains(ep.Message, "Porto") {
		t.Fatalf("first answer = %+v; want a question about Porto with a requestState", first)
	}
	t.Run("OK", func(t *testing.T) {
		res := get(args, first.RequestState, mcp.InputResponseMap{"trip": accept(map[string]any{"days": 2, "likes": "tiles"})})
		if len(res.InputRequests) > 0 || len(res.Messages) != 2 {
			t.Fatalf("result = %+v; want two messages", res)
		}
		if got := res.Messages[1].Content.(*mcp.TextContent).Text; got != "Plan a 2-day trip to Porto. I like tiles." {
			t.Errorf("user message = %q", got)
		}
	})
	t.Run("ErrOtherArguments", func(t *testing.T) {
		_, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "trip_plan", Arguments: map[string]string{"destination": "Faro"},
			RequestState: first.RequestState, InputResponses: mcp.InputResponseMap{"trip": accept(map[string]any{"days": 2})}})
		wantInvalidParams(t, err, "different arguments")
	})
	t.Run("ErrMissingArgument", func(t *testing.T) {
		_, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "trip_plan"})
		wantInvalidParams(t, err, "destination")
	})
	t.Run("Declined", func(t *testing.T) {
		res := get(args, first.RequestState, mcp.InputResponseMap{"trip": decline()})
		if !strings.Contains(res.Description, "declined") {
			t.Errorf("description = %q", res.Description)
		}
	})
}

func TestResources(t *testing.T) {
	cs := startAll(t)
	read := func(uri, state string, responses mcp.InputResponseMap) *mcp.ReadResourceResult {
		t.Helper()
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri, RequestState: state, InputResponses: responses})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Run("SecretNoteAsks", func(t *testing.T) {
		first := read("demo://notes/secret", "", nil)
		if _, ok := first.InputRequests["reason"].(*mcp.ElicitParams); !ok || first.RequestState == "" {
			t.Fatalf("first answer = %+v; want the reason asked", first)
		}
		res := read("demo://notes/secret", first.RequestState, mcp.InputResponseMap{"reason": accept(map[string]any{"reason": "testing"})})
		if len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "Read because: testing") {
			t.Errorf("contents = %+v", res.Contents)
		}
	})
	t.Run("LogoIsAPNG", func(t *testing.T) {
		res := read("demo://images/logo.png", "", nil)
		if len(res.Contents) != 1 || res.Contents[0].MIMEType != "image/png" {
			t.Fatalf("contents = %+v", res.Contents)
		}
		if _, err := png.Decode(bytes.NewReader(res.Contents[0].Blob)); err != nil {
			t.Errorf("logo: %v", err)
		}
	})
	t.Run("Template", func(t *testing.T) {
		res := read("demo://greetings/Ada", "", nil)
		if len(res.Contents) != 1 || res.Contents[0].Text != "Hello, Ada!" {
			t.Errorf("contents = %+v", res.Contents)
		}
	})
}

func TestWriteHaiku(t *testing.T) {
	cs := startAll(t)
	first := MustCall(t, cs, "write_haiku", map[string]any{"topic": "rain"}, "", nil)
	cm, ok := first.InputRequests["haiku"].(*mcp.CreateMessageWithToolsParams)
	if !ok {
		t.Fatalf("inputRequests = %#v; want a sampling request", first.InputRequests)
	}
	if cm.MaxTokens != 60 || cm.SystemPrompt == "" || len(cm.Messages) != 1 {
		t.Errorf("sampling request = %+v", cm)
	}
	reply := &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "human", StopReason: "endTurn",
		Content: []mcp.Content{&mcp.TextContent{Text: "Drops on the window"}}}
	res := MustCall(t, cs, "write_haiku", map[string]any{"topic": "rain"}, first.RequestState, mcp.InputResponseMap{"haiku": reply})
	if got := MustFinish(t, res); got != "A haiku about rain, by human:\nDrops on the window" {
		t.Errorf("result = %q", got)
	}
}

func TestShowRoots(t *testing.T) {
	cs := startAll(t)
	first := MustCall(t, cs, "show_roots", nil, "", nil)
	if _, ok := first.InputRequests["roots"].(*mcp.ListRootsParams); !ok {
		t.Fatalf("inputRequests = %#v; want roots/list", first.InputRequests)
	}
	roots := &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///srv/data", Name: "Data"}, {URI: "file:///home"}}}
	res := MustCall(t, cs, "show_roots", nil, first.RequestState, mcp.InputResponseMap{"roots": roots})
	if got := MustFinish(t, res); got != "You shared 2 roots: Data (file:///srv/data), file:///home" {
		t.Errorf("result = %q", got)
	}
}

// TestSamplingAndRootsNeedCapabilities: the demo asks for neither of a
// client that has not declared it.
func TestSamplingAndRootsNeedCapabilities(t *testing.T) {
	cs := start(t, newClock()) // elicitation only
	for tool, capability := range map[string]string{"write_haiku": "sampling", "show_roots": "roots"} {
		args := map[string]any{}
		if tool == "write_haiku" {
			args["topic"] = "rain"
		}
		_, err := call(t, cs, tool, args, "", nil)
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(werr.Data), capability) {
			t.Errorf("%s: err = %v; want a missing %s capability", tool, err, capability)
		}
	}
}
