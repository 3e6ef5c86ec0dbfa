package round

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/store"
)

// TestStartCheck refuses a start that names no method the client knows,
// no server or target, or a protocol nobody speaks, before anything is
// looked up, and takes tools/call when no method is named.
func TestStartCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		start Start
		want  string // the sentence refused with, "" when it fits
	}{
		{"OK", Start{Server: "demo", Target: "echo"}, ""},
		{"OKAuto", Start{Server: "demo", Method: "prompts/get", Target: "greet", Protocol: "auto"}, ""},
		{"ErrMethod", Start{Server: "demo", Method: "tools/list", Target: "echo"}, `"method" must be "tools/call", "prompts/get" or "resources/read".`},
		{"ErrServer", Start{Target: "echo"}, `"server" and "tool" are required.`},
		{"ErrURI", Start{Server: "demo", Method: "resources/read"}, `"server" and "uri" are required.`},
		{"ErrProtocol", Start{Server: "demo", Target: "echo", Protocol: "2024-10-07"}, `"protocol" must be ` + ProtocolChoices() + "."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.start
			err := s.Check()
			if got := errText(err); got != tt.want {
				t.Fatalf("Check = %q, want %q", got, tt.want)
			}
			if err == nil && s.Method == "" {
				t.Error("no method taken")
			}
		})
	}
}

// TestNewCall checks a start against what was found on the server: the
// tool's input schema (an optional null dropped, as not given), the
// prompt's arguments, a resource's URI; and names the target and title as
// the server does.
func TestNewCall(t *testing.T) {
	t.Parallel()
	tool := &mcp.Tool{Name: "book", Annotations: &mcp.ToolAnnotations{Title: "Book a trip"}, InputSchema: json.RawMessage(`{
		"type":"object","properties":{"city":{"type":"string"},"note":{"type":"string"}},"required":["city"]}`)}
	prompt := &mcp.Prompt{Name: "greet", Title: "Greeting", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}}
	srv := &store.Server{ID: 7, Name: "demo"}
	for _, tt := range []struct {
		name   string
		start  Start
		found  Found
		want   store.NewCall
		err    string // the sentence refused with
		fields []string
	}{
		{"Tool", Start{Target: "book", Arguments: json.RawMessage(`{"city":"Lisbon","note":null}`), Protocol: "auto"}, Found{Tool: tool},
			store.NewCall{ServerID: 7, Method: "tools/call", Target: "book", Title: "Book a trip", Arguments: json.RawMessage(`{"city":"Lisbon"}`)}, "", nil},
		{"ToolUnchecked", Start{Target: "book", Title: "Book", Protocol: "2025-11-25"}, Found{},
			store.NewCall{ServerID: 7, Method: "tools/call", Target: "book", Title: "Book", Arguments: json.RawMessage(`{}`), Protocol: "2025-11-25"}, "", nil},
		{"ErrTool", Start{Target: "book", Arguments: json.RawMessage(`{"city":null}`)}, Found{Tool: tool},
			store.NewCall{}, "The arguments do not fit the tool's input schema.", []string{"city"}},
		{"Prompt", Start{Method: "prompts/get", Target: "greet", Arguments: json.RawMessage(`{"who":"Ada"}`)}, Found{Prompt: prompt},
			store.NewCall{ServerID: 7, Method: "prompts/get", Target: "greet", Title: "Greeting", Arguments: json.RawMessage(`{"who":"Ada"}`)}, "", nil},
		{"ErrPrompt", Start{Method: "prompts/get", Target: "greet", Arguments: json.RawMessage(`{"who":1,"x":"y"}`)}, Found{Prompt: prompt},
			store.NewCall{}, "The arguments do not fit the prompt's arguments.", []string{"who", "x"}},
		{"Resource", Start{Method: "resources/read", Target: "file:///notes.txt", Arguments: json.RawMessage(`null`)}, Found{},
			store.NewCall{ServerID: 7, Method: "resources/read", Target: "file:///notes.txt", Arguments: json.RawMessage(`{}`)}, "", nil},
		{"ErrResourceURI", Start{Method: "resources/read", Target: "notes.txt"}, Found{},
			store.NewCall{}, "A resource URI must be absolute, such as file:///notes.txt or https://example.com/a.", nil},
		{"ErrResourceArguments", Start{Method: "resources/read", Target: "file:///a", Arguments: json.RawMessage(`{"a":1}`)}, Found{},
			store.NewCall{}, `A resource read takes no "arguments".`, nil},
		{"ErrNotObject", Start{Target: "book", Arguments: json.RawMessage(`[1]`)}, Found{Tool: tool},
			store.NewCall{}, `"arguments" must be a JSON object.`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := NewCall(srv, tt.start, tt.found)
			if errText(err) != tt.err {
				t.Fatalf("NewCall = %v, want %q", err, tt.err)
			}
			if err != nil {
				var se *StartError
				if !errors.As(err, &se) || len(se.Fields) != len(tt.fields) {
					t.Fatalf("error %#v, want fields %q", err, tt.fields)
				}
				for _, f := range tt.fields {
					if se.Fields[f] == "" {
						t.Errorf("no error for %s in %v", f, se.Fields)
					}
				}
				return
			}
			if got.ServerID != tt.want.ServerID || got.Method != tt.want.Method || got.Target != tt.want.Target ||
				got.Title != tt.want.Title || string(got.Arguments) != string(tt.want.Arguments) || got.Protocol != tt.want.Protocol {
				t.Errorf("NewCall = %+v (arguments %s), want %+v (arguments %s)", got, got.Arguments, tt.want, tt.want.Arguments)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
