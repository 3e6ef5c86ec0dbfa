package demo

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The demo's prompt, resources and the tools that ask for sampling and
// roots. The prompt and the secret note ask before they answer, in rounds
// sealed like the tools'.

// prompt is a demo prompt: rounds of questions, then its messages.
type prompt struct {
	def    *mcp.Prompt
	rounds []func(c *call) []question
	finish func(c *call) *mcp.GetPromptResult
}

// resource is a demo resource: rounds of questions, then its contents.
type resource struct {
	def    *mcp.Resource
	rounds []func(c *call) []question
	finish func(c *call) *mcp.ReadResourceResult
}

func (d *demo) prompts() []*prompt { return []*prompt{tripPlan()} }

func (d *demo) resources() []*resource { return []*resource{secretNote(), logo()} }

// promptHandler runs a prompt's rounds, like a tool's.
func (d *demo) promptHandler(p *prompt) mcp.PromptHandler {
	return func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := map[string]any{}
		for _, a := range p.def.Arguments {
			v := strings.TrimSpace(req.Params.Arguments[a.Name])
			if a.Required && v == "" {
				return nil, invalidParams("missing required argument " + a.Name)
			}
			if v != "" {
				args[a.Name] = v
			}
		}
		c, asks, err := d.play("prompt:"+p.def.Name, p.rounds, args, req.Params.RequestState, req.Params.InputResponses, req.ClientCapabilities())
		if err != nil {
			return nil, err
		}
		if asks != nil {
			return &mcp.GetPromptResult{InputRequests: asks.requests, RequestState: asks.state}, nil
		}
		return p.finish(c), nil
	}
}

// resourceHandler runs a resource's rounds, like a tool's.
func (d *demo) resourceHandler(r *resource) mcp.ResourceHandler {
	return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		c, asks, err := d.play("resource:"+r.def.URI, r.rounds, map[string]any{}, req.Params.RequestState, req.Params.InputResponses, req.ClientCapabilities())
		if err != nil {
			return nil, err
		}
		if asks != nil {
			return &mcp.ReadResourceResult{InputRequests: asks.requests, RequestState: asks.state}, nil
		}
		return r.finish(c), nil
	}
}

// greetingTemplate is a resource template that asks nothing.
var greetingTemplate = &mcp.ResourceTemplate{
	URITemplate: "demo://greetings/{name}",
	Name:        "greeting",
	Title:       "A greeting",
	Description: "A greeting for whoever you name.",
	MIMEType:    "text/plain",
}

func greetingHandler(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	name, ok := strings.CutPrefix(req.Params.URI, "demo://greetings/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: req.Params.URI, MIMEType: "text/plain", Text: "Hello, " + name + "!",
	}}}, nil
}

func tripPlan() *prompt {
	trip := mustForm(`{"type":"object","properties":{
		"days":{"type":"integer","title":"How many days","minimum":1,"maximum":30,"default":3},
		"likes":{"type":"string","title":"What you like","description":"Museums, food, walks…","maxLength":200}},
		"required":["days"]}`)
	return &prompt{
		def: &mcp.Prompt{
			Name:        "trip_plan",
			Title:       "Plan a trip",
			Description: "A prompt that plans a trip; it asks how long, and what you like, before it is ready.",
			Arguments: []*mcp.PromptArgument{
				{Name: "destination", Title: "Destination", Description: "Where to", Required: true},
			},
		},
		rounds: []func(*call) []question{func(c *call) []question {
			return []question{{key: "trip", form: trip, message: fmt.Sprintf("How long will you stay in %s, and what do you like?", c.args["destination"])}}
		}},
		finish: func(c *call) *mcp.GetPromptResult {
			if c.action != "accept" {
				return &mcp.GetPromptResult{
					Description: "No plan: the questions were " + c.action + "d.",
					Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{
						Text: fmt.Sprintf("Suggest what to see in %s.", c.args["destination"])}}},
				}
			}
			days, _ := number(c.answers["trip"]["days"])
			ask := fmt.Sprintf("Plan a %d-day trip to %s.", int(days), c.args["destination"])
			if likes, _ := c.answers["trip"]["likes"].(string); likes != "" {
				ask += " I like " + likes + "."
			}
			return &mcp.GetPromptResult{
				Description: fmt.Sprintf("A %d-day plan for %s", int(days), c.args["destination"]),
				Messages: []*mcp.PromptMessage{
					{Role: "assistant", Content: &mcp.TextContent{Text: "You are a travel planner who suggests one thing a day."}},
					{Role: "user", Content: &mcp.TextContent{Text: ask}},
				},
			}
		},
	}
}

func secretNote() *resource {
	reason := mustForm(`{"type":"object","properties":{
		"reason":{"type":"string","title":"Why you need it","minLength":3,"maxLength":200}},
		"required":["reason"]}`)
	const uri = "demo://notes/secret"
	return &resource{
		def: &mcp.Resource{
			URI: uri, Name: "secret_note", Title: "The secret note", MIMEType: "text/plain",
			Description: "A note that is read only once you say why you need it.",
		},
		rounds: []func(*call) []question{fixed(question{key: "reason", form: reason, message: "Why do you need the secret note?"})},
		finish: func(c *call) *mcp.ReadResourceResult {
			text := "The note stays sealed."
			if c.action == "accept" {
				text = fmt.Sprintf("The secret is that there is no secret. (Read because: %s)", c.answers["reason"]["reason"])
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}
		},
	}
}

//go:embed logo.png
var logoPNG []byte

func logo() *resource {
	const uri = "demo://images/logo.png"
	return &resource{
		def: &mcp.Resource{
			URI: uri, Name: "logo", Title: "The demo's logo", MIMEType: "image/png",
			Description: "A small image, binary contents to download.",
		},
		finish: func(*call) *mcp.ReadResourceResult {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "image/png", Blob: logoPNG}}}
		},
	}
}

func writeHaiku() *tool {
	return &tool{
		def: &mcp.Tool{
			Name:        "write_haiku",
			Title:       "Write a haiku",
			Description: "Asks a language model (sampling) for a haiku; you write the model's reply.",
		},
		input: mustForm(`{"type":"object","properties":{
			"topic":{"type":"string","title":"Topic","minLength":1,"maxLength":80}},
			"required":["topic"]}`),
		rounds: []func(*call) []question{func(c *call) []question {
			return []question{{key: "haiku", sampling: &mcp.CreateMessageParams{
				SystemPrompt: "You are a poet. Answer with a haiku only: three lines of five, seven and five syllables.",
				Messages: []*mcp.SamplingMessage{
					{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Write a haiku about %s.", c.args["topic"])}},
				},
				MaxTokens: 60,
				ModelPreferences: &mcp.ModelPreferences{
					Hints:                []*mcp.ModelHint{{Name: "claude"}},
					IntelligencePriority: 0.7, SpeedPriority: 0.3,
				},
			}}}
		}},
		finish: func(c *call) *mcp.CallToolResult {
			a := c.answers["haiku"]
			return text(fmt.Sprintf("A haiku about %s, by %s:\n%s", c.args["topic"], a["model"], a["text"]))
		},
	}
}

func showRoots() *tool {
	return &tool{
		def: &mcp.Tool{
			Name:        "show_roots",
			Title:       "Show your roots",
			Description: "Asks which folders it may look at (roots) and lists them. Rounds answers from its settings.",
		},
		input:  mustForm(noArguments),
		rounds: []func(*call) []question{fixed(question{key: "roots", roots: true})},
		finish: func(c *call) *mcp.CallToolResult {
			roots, _ := c.answers["roots"]["roots"].([]any)
			if len(roots) == 0 {
				return text("You shared no roots.")
			}
			var lines []string
			for _, r := range roots {
				m, _ := r.(map[string]any)
				line := fmt.Sprint(m["uri"])
				if name, _ := m["name"].(string); name != "" {
					line = name + " (" + line + ")"
				}
				lines = append(lines, line)
			}
			return text(fmt.Sprintf("You shared %d %s: %s", len(roots), plural(len(roots), "root"), strings.Join(lines, ", ")))
		},
	}
}
