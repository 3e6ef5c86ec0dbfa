package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/mcptest"
)

// TestMain doubles as a fake Python server over stdio when run with
// ROUNDS_TEST_STDIO set to its flavour, so tests start it as a program.
func TestMain(m *testing.M) {
	if flavour := os.Getenv("ROUNDS_TEST_STDIO"); flavour != "" {
		if err := mcptest.ServeStdio(mcptest.Flavour(flavour), os.Stdin, os.Stdout, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stderrLines collects what a local server writes to stderr.
type stderrLines struct {
	mu    sync.Mutex
	lines []string
}

func (s *stderrLines) add(line string) {
	s.mu.Lock()
	s.lines = append(s.lines, line)
	s.mu.Unlock()
}

func (s *stderrLines) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

// localFake registers this test binary as the local server "fake", a
// FastMCP 4 fake over stdio, and returns the client that runs it.
func localFake(t *testing.T, maxProcesses int) (*mcpclient.Client, *mcpclient.Locals, *stderrLines) {
	t.Helper()
	locals := mcpclient.NewLocals()
	var errs stderrLines
	locals.Add("fake", mcpclient.Command{Path: os.Args[0], Args: []string{"-test.run=^$"},
		Env: []string{"ROUNDS_TEST_STDIO=" + string(mcptest.FastMCP4)}, Dir: t.TempDir()}, maxProcesses, true)
	locals.OnStderr(func(_, line string) { errs.add(line) })
	t.Cleanup(func() {
		if p := locals.Process("fake"); p != nil {
			p.Stop()
		}
	})
	return mcpclient.New(mcpclient.Options{Locals: locals, RequestTimeout: 10 * time.Second}), locals, &errs
}

// TestStdioStateless: a 2026-07-28 round over the shared process names the
// process that asked; its answer completes the call there, and after a
// restart the state is refused as expired, without being sent, and the
// new process itself refuses it when it is.
func TestStdioStateless(t *testing.T) {
	t.Parallel()
	c, locals, errs := localFake(t, 4)
	p, err := locals.Start("fake")
	if err != nil {
		t.Fatal(err)
	}
	srv := forms(mcpclient.LocalScheme + "fake")
	req := mcpclient.Request{Name: "book_trip_batched"}
	out, err := c.Send(ctx(t), srv, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Protocol != mcpclient.ProtocolStateless || out.Round == nil || len(out.Round.Questions) != 3 || out.Round.Process != p.ID {
		t.Fatalf("outcome = %+v, want a 2026-07-28 round from process %s", out, p.ID)
	}
	answers := json.RawMessage(`{"destination":{"action":"accept","content":{"value":"Porto"}},"travellers":{"action":"accept","content":{"value":2}},"cabin":{"action":"accept","content":{"value":"first"}}}`)
	ans := &mcpclient.Answers{InputResponses: answers, RequestState: out.Round.RequestState, Process: out.Round.Process}
	done, err := c.Send(ctx(t), srv, req, ans)
	if err != nil || !strings.Contains(string(done.Result), "Booked 2 to Porto, first") {
		t.Fatalf("result = %v, %v", done, err)
	}

	// The same question again, and then the process restarts.
	out, err = c.Send(ctx(t), srv, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	if _, err := locals.Start("fake"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(ctx(t), srv, req, &mcpclient.Answers{InputResponses: answers, RequestState: out.Round.RequestState, Process: out.Round.Process})
	var gone *mcpclient.ProcessGoneError
	if !errors.As(err, &gone) || !mcpclient.StateExpired(err) {
		t.Fatalf("err = %v, want the process gone, taken as expired state", err)
	}
	// Sent anyway, the new process cannot open what the old one sealed.
	_, err = c.Send(ctx(t), srv, req, &mcpclient.Answers{InputResponses: answers, RequestState: out.Round.RequestState})
	if !mcpclient.StateExpired(err) || errors.As(err, &gone) {
		t.Fatalf("err = %v, want the server's own refusal of the state", err)
	}
	if !slices.Contains(errs.all(), "fastmcp-4.0.0b3: serving over stdio") {
		t.Errorf("stderr = %q, want its lines", errs.all())
	}
}

// TestStdioHeld: a handshake-era session gets a process of its own, its
// question reaches the person byte for byte, and the process ends with
// the call. A call beyond maxProcesses waits, and is refused as busy when
// no process frees in time.
func TestStdioHeld(t *testing.T) {
	t.Parallel()
	c, locals, _ := localFake(t, 1)
	var asked []json.RawMessage
	var during []int
	srv := heldServer(mcpclient.LocalScheme+"fake", &asked, `{"action":"accept","content":{"name":"Ada","age":36}}`)
	ask := srv.Held.Ask
	srv.Held.Ask = func(ctx context.Context, q mcpclient.Question) (json.RawMessage, error) {
		during = locals.Sessions("fake")
		// Another call meanwhile finds the one process busy.
		short := mcpclient.New(mcpclient.Options{Locals: locals, RequestTimeout: 300 * time.Millisecond})
		if _, err := short.Send(ctx, heldServer(mcpclient.LocalScheme+"fake", new([]json.RawMessage), `{}`),
			mcpclient.Request{Name: "get_user_name"}, nil); !errors.Is(err, mcpclient.ErrProcessesBusy) {
			t.Errorf("a second call = %v, want ErrProcessesBusy", err)
		}
		return ask(ctx, q)
	}
	out, err := c.Send(ctx(t), srv, mcpclient.Request{Name: "collect_user_info"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out.Result), "Hello Ada, you are 36 years old") {
		t.Errorf("result = %s", out.Result)
	}
	if len(asked) != 1 || !strings.HasPrefix(string(asked[0]), `{"mode":"form","message":`) ||
		!strings.Contains(string(asked[0]), `"properties":{"name":{"title":"Name","type":"string"},"age":`) {
		t.Errorf("asked %s, want the params as sent", asked)
	}
	if len(during) != 1 {
		t.Errorf("processes during the call = %v, want one", during)
	}
	waitFor(t, func() bool { return len(locals.Sessions("fake")) == 0 })
}

// TestStdioHeldProcessDies: the process holding a question dies, and the
// call ends at once with an error that says so.
func TestStdioHeldProcessDies(t *testing.T) {
	t.Parallel()
	c, locals, _ := localFake(t, 4)
	srv := heldServer(mcpclient.LocalScheme+"fake", new([]json.RawMessage), `{}`)
	srv.Held.Ask = func(ctx context.Context, q mcpclient.Question) (json.RawMessage, error) {
		for _, pid := range locals.Sessions("fake") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		<-ctx.Done() // a person who never answers
		return nil, ctx.Err()
	}
	start := time.Now()
	_, err := c.Send(ctx(t), srv, mcpclient.Request{Name: "collect_user_info"}, nil)
	var exited *mcpclient.ProcessExitedError
	if !errors.As(err, &exited) || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("err = %v, want the process's end", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStdioSharedSession: a server pinned to 2026-07-28 is listed over the
// shared process, as a go-sdk session of its own on it, and no process is
// started for it; the process goes on serving requests afterwards.
func TestStdioSharedSession(t *testing.T) {
	t.Parallel()
	c, locals, _ := localFake(t, 1)
	p, err := locals.Start("fake")
	if err != nil {
		t.Fatal(err)
	}
	srv := forms(mcpclient.LocalScheme + "fake")
	srv.Protocol = mcpclient.ProtocolStateless
	tools, err := c.ListTools(ctx(t), srv)
	if err != nil {
		t.Fatal(err)
	}
	if tools.Protocol != mcpclient.ProtocolStateless || len(tools.Raw) != len(tools.Tools) ||
		!strings.HasPrefix(string(tools.Raw["book_trip_batched"]), `{"_meta":{"fastmcp":{"tags":[]}},"description":"Several questions`) {
		t.Fatalf("%s: %d tools, %d raw, book_trip_batched as %.80s; want each as the server wrote it",
			tools.Protocol, len(tools.Tools), len(tools.Raw), tools.Raw["book_trip_batched"])
	}
	if n := len(locals.Sessions("fake")); n != 0 {
		t.Errorf("%d processes of their own started, want none", n)
	}
	out, err := c.Send(ctx(t), srv, mcpclient.Request{Name: "book_trip_batched"}, nil)
	if err != nil || out.Round == nil || out.Round.Process != p.ID {
		t.Fatalf("after the listing: %+v, %v", out, err)
	}
}

// TestStdioNotJSON: a program that prints what is not JSON-RPC to stdout
// breaks the transport; the process's end says so.
func TestStdioNotJSON(t *testing.T) {
	t.Parallel()
	locals := mcpclient.NewLocals()
	locals.Add("chatty", mcpclient.Command{Path: "/bin/sh", Args: []string{"-c", "echo Starting up...; sleep 30"}}, 1, true)
	p, err := locals.Start("chatty")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the process was not stopped")
	}
	if err := p.Err(); !strings.Contains(err.Error(), "it wrote to stdout what is not a JSON-RPC message") {
		t.Errorf("err = %v", err)
	}
}

// runningMarked lists the running processes (not zombies: this machine's
// init may never reap those it inherits) whose environment carries
// ROUNDS_TEST_MARK=mark.
func runningMarked(t *testing.T, mark string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), "ROUNDS_TEST_MARK="+mark) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if state := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[0]; state != "Z" && state != "X" {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestStdioProcessTree: a program that starts a process of its own (as npx
// or a wrapper script does), which holds its stdout. When the program is
// killed, its end is seen at once and its child ends too; when it is
// stopped, its child ends with it.
func TestStdioProcessTree(t *testing.T) {
	t.Parallel()
	mark := t.Name() + strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		for _, pid := range runningMarked(t, mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	locals := mcpclient.NewLocals()
	locals.Add("tree", mcpclient.Command{Path: "/bin/sh", Args: []string{"-c", `sleep 1000 & exec "$0" "$@"`, os.Args[0], "-test.run=^$"},
		Env: []string{"ROUNDS_TEST_STDIO=" + string(mcptest.FastMCP4), "ROUNDS_TEST_MARK=" + mark}}, 1, true)
	for _, stop := range []string{"killed", "stopped"} {
		p, err := locals.Start("tree")
		if err != nil {
			t.Fatal(err)
		}
		var pids []int
		waitFor(t, func() bool { pids = runningMarked(t, mark); return len(pids) == 2 })
		if stop == "killed" {
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the program's end was not seen while its child held its stdout")
			}
			if err := p.Err(); !strings.Contains(err.Error(), "signal: killed") {
				t.Errorf("err = %v", err)
			}
		} else {
			p.Stop()
		}
		waitFor(t, func() bool { return len(runningMarked(t, mark)) == 0 })
	}
}
