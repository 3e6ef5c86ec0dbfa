package demo_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
