// Package demo is a small MCP server, speaking revision 2026-07-28, whose
// tools, prompt and resources ask their questions through Multi Round-Trip
// Requests: a request answers with input_required, input requests
// (elicitation, sampling, roots) and a signed requestState, and the client
// retries with the answers. Two tools show long work: generate_report
// reports its progress, and deploy_release runs as a task of the tasks
// extension and asks midway (tasks.go).
package demo

import (
	"crypto/rand"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configures the demo server.
type Options struct {
	// Secret keys the HMAC that signs requestState. If empty, a random
	// secret is generated, so state does not survive a restart.
	Secret []byte
	// StateTTL is how long a requestState stays valid. Default 1h.
	StateTTL time.Duration
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// demo holds what every tool call needs.
type demo struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
	tasks  *taskTable // deploy_release's tasks (tasks.go)
}

func newDemo(opts Options) *demo {
	d := &demo{secret: opts.Secret, ttl: opts.StateTTL, now: opts.Now}
	if len(d.secret) == 0 {
		d.secret = make([]byte, 32)
		rand.Read(d.secret) // never returns an error
	}
	if d.ttl <= 0 {
		d.ttl = time.Hour
	}
	if d.now == nil {
		d.now = time.Now
	}
	d.tasks = &taskTable{now: d.now, tasks: map[string]*taskRun{}}
	return d
}

// NewServer returns the demo MCP server with all its tools. Served by
// itself, deploy_release only says it needs the tasks extension: Handler
// serves its tasks.
func NewServer(opts Options) *mcp.Server { return newDemo(opts).server() }

func (d *demo) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "rounds-demo", Title: "Rounds demo", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: "Demo tools that ask the user questions through multi round-trip requests.",
		// The SDK adds tools, prompts and resources; deploy_release runs
		// as a task.
		Capabilities: &mcp.ServerCapabilities{Extensions: map[string]any{extensionTasks: map[string]any{}}},
	})
	for _, t := range d.tools() {
		h := d.handler(t)
		if t.run != nil {
			h = t.run
		}
		s.AddTool(t.def, h)
	}
	for _, p := range d.prompts() {
		s.AddPrompt(p.def, d.promptHandler(p))
	}
	for _, r := range d.resources() {
		s.AddResource(r.def, d.resourceHandler(r))
	}
	s.AddResourceTemplate(greetingTemplate, greetingHandler)
	return s
}

// Handler serves the demo server over streamable HTTP in stateless mode,
// and deploy_release's tasks. It ignores the request path, so it can be
// mounted anywhere.
func Handler(opts Options) http.Handler {
	d := newDemo(opts)
	s := d.server()
	return d.serveTasks(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
}
