package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcptest"
)

// agentsDir holds the MCP clients nobody here wrote, from npm (package.json
// and its lockfile), and the small agents written on them.
const agentsDir = "testdata/agents"

// The agents: the TypeScript SDK's v2 client, which speaks 2026-07-28, and
// its v1, which speaks 2025-11-25.
const (
	agentNext    = "agent-next.mjs"
	agentClassic = "agent-classic.mjs"
)

// agentSpec tells an agent what to do (agent.mjs describes it).
type agentSpec struct {
	URL       string        `json:"url"`
	Token     string        `json:"token,omitempty"`
	Protocol  string        `json:"protocol,omitempty"`
	TimeoutMS int           `json:"timeoutMs,omitempty"`
	Elicit    *elicitAnswer `json:"elicit,omitempty"`
	Steps     []agentStep   `json:"steps"`
}

// elicitAnswer is what the agent's elicitation handler answers every
// question with. Without one, the agent declares no elicitation.
type elicitAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

type agentStep struct {
	Do        string         `json:"do"`
	Name      string         `json:"name,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

func listTools() agentStep { return agentStep{Do: "list_tools"} }

func callTool(name string, args map[string]any) agentStep {
	return agentStep{Do: "call_tool", Name: name, Arguments: args}
}

// agentEvent is one line an agent printed.
type agentEvent struct {
	Event    string          `json:"event"`
	Protocol string          `json:"protocol"`
	Era      string          `json:"era"`
	Session  string          `json:"session"`
	Tools    json.RawMessage `json:"tools"`
	Result   json.RawMessage `json:"result"`
	Params   json.RawMessage `json:"params"`
	Code     json.RawMessage `json:"code"`
	Message  string          `json:"message"`
	Line     string          `json:"-"`
}

// needAgents returns node, or fails the test when node or the npm clients
// are missing.
func needAgents(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed; the journeys drive the TypeScript SDK's clients with it: %v", err)
	}
	for _, pkg := range []string{"client", "sdk", "conformance"} {
		if _, err := os.Stat(filepath.Join(agentsDir, "node_modules", "@modelcontextprotocol", pkg, "package.json")); err != nil {
			t.Fatalf("the npm clients are not installed: run npm ci --prefix journeys/testdata/agents (%v)", err)
		}
	}
	return node
}

// agentRun is an agent running as a process of its own.
type agentRun struct {
	t       *testing.T
	script  string
	started time.Time
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	done    chan struct{}
	err     error
}

// startAgent runs script with spec, to be waited for; it is killed when
// the test ends or a minute after the spec's request timeout.
func startAgent(t *testing.T, script string, spec agentSpec) *agentRun {
	t.Helper()
	node := needAgents(t)
	in, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	timeout := 60_000 // the agents' default, as agent.mjs says
	if spec.TimeoutMS > 0 {
		timeout = spec.TimeoutMS
	}
	limit := time.Minute + time.Duration(timeout)*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = agentsDir
	cmd.Stdin = bytes.NewReader(in)
	r := &agentRun{t: t, script: script, started: time.Now(), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		defer cancel()
		r.err = cmd.Wait()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r.err = fmt.Errorf("killed after %s: %w", limit, r.err)
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// exited says whether the agent has exited.
func (r *agentRun) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// wait returns what the agent printed once it has exited, and fails the
// test, with its standard error, if it did not exit cleanly.
func (r *agentRun) wait() []agentEvent {
	r.t.Helper()
	<-r.done
	r.t.Logf("%s ran %s", r.script, time.Since(r.started).Round(time.Millisecond))
	if r.err != nil {
		r.t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", r.script, r.err, r.stdout.String(), r.stderr.String())
	}
	var events []agentEvent
	for line := range strings.SplitSeq(strings.TrimSpace(r.stdout.String()), "\n") {
		e := agentEvent{Event: "text"}
		_ = json.Unmarshal([]byte(line), &e)
		e.Line = line
		events = append(events, e)
	}
	return events
}

// runAgent runs script with spec and returns what it printed.
func runAgent(t *testing.T, script string, spec agentSpec) []agentEvent {
	t.Helper()
	return startAgent(t, script, spec).wait()
}

// eventsOf returns the events of one kind, in order.
func eventsOf(events []agentEvent, kind string) []agentEvent {
	var out []agentEvent
	for _, e := range events {
		if e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

// nthEvent returns the i-th event of kind, or fails the test showing
// everything the agent printed.
func nthEvent(t *testing.T, events []agentEvent, kind string, i int) agentEvent {
	t.Helper()
	of := eventsOf(events, kind)
	if i >= len(of) {
		t.Fatalf("the agent printed %d %q events, want at least %d:\n%s", len(of), kind, i+1, printed(events))
	}
	return of[i]
}

func printed(events []agentEvent) string {
	lines := make([]string, len(events))
	for i, e := range events {
		lines[i] = e.Line
	}
	return strings.Join(lines, "\n")
}

// toolNames lists the names in a tools event.
func toolNames(t *testing.T, e agentEvent) []string {
	t.Helper()
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(e.Tools, &tools); err != nil {
		t.Fatalf("tools %s: %v", e.Tools, err)
	}
	names := make([]string, len(tools))
	for i, tool := range tools {
		names[i] = tool.Name
	}
	return names
}

// elicitMessage is the message of an elicitation event.
func elicitMessage(t *testing.T, e agentEvent) string {
	t.Helper()
	var p struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(e.Params, &p); err != nil {
		t.Fatalf("elicitation %s: %v", e.Params, err)
	}
	return p.Message
}

// TestAgentsOnServers runs the agents against MCP servers directly, with
// nothing of Rounds between: that each generation lists, calls, answers a
// question with its handler, follows progress and gives up at its timeout,
// as the journeys through Rounds rely on.
func TestAgentsOnServers(t *testing.T) {
	t.Parallel()
	needAgents(t)
	demo := demoServer(t, nil)
	ada := &elicitAnswer{Action: "accept", Content: map[string]any{"name": "Ada", "age": 36}}

	t.Run("Next", func(t *testing.T) {
		t.Parallel()
		events := runAgent(t, agentNext, agentSpec{URL: demo, Elicit: ada, Steps: []agentStep{
			listTools(),
			callTool("current_time", nil),
			callTool("collect_user_info", nil),
			callTool("generate_report", map[string]any{"seconds": 1}),
		}})
		if c := nthEvent(t, events, "connected", 0); c.Protocol != "2026-07-28" || c.Era != "modern" {
			t.Errorf("connected with %s (%s), want 2026-07-28 (modern)", c.Protocol, c.Era)
		}
		names := strings.Join(toolNames(t, nthEvent(t, events, "tools", 0)), " ")
		if !strings.Contains(names, "current_time") || !strings.Contains(names, "collect_user_info") {
			t.Errorf("tools = %s", names)
		}
		if got := resultText(t, nthEvent(t, events, "result", 0).Result); !strings.HasPrefix(got, "The time is ") {
			t.Errorf("current_time = %q", got)
		}
		if got := elicitMessage(t, nthEvent(t, events, "elicitation", 0)); got != "Tell us about yourself." {
			t.Errorf("asked %q", got)
		}
		if got := resultText(t, nthEvent(t, events, "result", 1).Result); got != "Hello, Ada! You are 36." {
			t.Errorf("collect_user_info = %q", got)
		}
		if got := resultText(t, nthEvent(t, events, "result", 2).Result); !strings.HasPrefix(got, "The report is ready") {
			t.Errorf("generate_report = %q", got)
		}
		var sections int
		for _, p := range eventsOf(events, "progress") {
			if strings.HasPrefix(p.Message, "Section ") {
				sections++
			}
		}
		if sections == 0 {
			t.Errorf("no progress from generate_report:\n%s", printed(events))
		}
	})

	t.Run("Classic", func(t *testing.T) {
		t.Parallel()
		everything := mcptest.EverythingStateful(t)
		ada := &elicitAnswer{Action: "accept", Content: map[string]any{"username": "ada"}}
		events := runAgent(t, agentClassic, agentSpec{URL: everything, Elicit: ada, Steps: []agentStep{
			listTools(),
			callTool("test_simple_text", nil),
			callTool("test_elicitation", map[string]any{"message": "Who are you?"}),
		}})
		if c := nthEvent(t, events, "connected", 0); c.Protocol != "2025-11-25" || c.Session == "" {
			t.Errorf("connected with %s, session %q; want 2025-11-25 and a session", c.Protocol, c.Session)
		}
		if names := strings.Join(toolNames(t, nthEvent(t, events, "tools", 0)), " "); !strings.Contains(names, "test_elicitation") {
			t.Errorf("tools = %s", names)
		}
		if got := resultText(t, nthEvent(t, events, "result", 0).Result); got != "This is a simple text response for testing." {
			t.Errorf("test_simple_text = %q", got)
		}
		if got := elicitMessage(t, nthEvent(t, events, "elicitation", 0)); got != "Who are you?" {
			t.Errorf("asked %q", got)
		}
		if got := resultText(t, nthEvent(t, events, "result", 1).Result); !strings.Contains(got, "action=accept") || !strings.Contains(got, "username:ada") {
			t.Errorf("test_elicitation = %q", got)
		}
		if errs := eventsOf(events, "error"); len(errs) > 0 {
			t.Errorf("errors: %s", errs[0].Line)
		}
	})

	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		events := runAgent(t, agentNext, agentSpec{URL: demo, TimeoutMS: 300, Steps: []agentStep{
			callTool("generate_report", map[string]any{"seconds": 5}),
		}})
		e := nthEvent(t, events, "error", 0)
		if !strings.Contains(strings.ToLower(e.Message), "timed out") {
			t.Errorf("error = %s", e.Line)
		}
		if len(eventsOf(events, "result")) > 0 {
			t.Errorf("a result came after the timeout:\n%s", printed(events))
		}
	})
}
