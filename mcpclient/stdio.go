package mcpclient

// The registry of local servers, run as programs over stdio: the stdio:
// scheme that names them, each one's command, shared process and places
// for per-session processes (Locals), and the errors their processes end
// requests with. How a request reaches one is stdio_transport.go; the
// shared process, stdio_shared.go; a program's start and stop,
// stdio_process.go.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// LocalScheme starts the URL Rounds gives a server it runs as a local
// program over stdio: "stdio:notes". Such a URL is never fetched; the
// program is found in the Client's Locals by the name after the colon.
const LocalScheme = "stdio:"

// LocalName returns the name of a local server's URL.
func LocalName(url string) (string, bool) { return strings.CutPrefix(url, LocalScheme) }

// Locals are the local servers an instance runs. Each may have one
// long-lived process, started and restarted by its owner (localproc),
// that 2026-07-28 requests share; a handshake-era session gets a process
// of its own, at most MaxProcesses of them at once.
type Locals struct {
	mu       sync.Mutex
	servers  map[string]*local
	stderr   func(server, line string)
	sessions func(server string, running, most int)
	launcher launcher
}

type local struct {
	cmd    Command
	slots  chan struct{}
	stderr func(line string)
	proc   *Process     // the shared process, when running
	held   map[int]bool // the pids of the processes of sessions of their own
	shared bool
}

// NewLocals returns an empty set of local servers.
func NewLocals() *Locals { return &Locals{servers: map[string]*local{}} }

// Add registers a local server: its command, how many processes that each
// hold one handshake-era session it may run at once, and whether it has a
// long-lived process shared by 2026-07-28 requests (shared).
func (l *Locals) Add(name string, cmd Command, maxProcesses int, shared bool) {
	if maxProcesses < 1 {
		maxProcesses = 1
	}
	s := &local{cmd: cmd, slots: make(chan struct{}, maxProcesses), held: map[int]bool{}, shared: shared}
	s.stderr = func(line string) {
		l.mu.Lock()
		f := l.stderr
		l.mu.Unlock()
		if f != nil {
			f(name, line)
		}
	}
	l.mu.Lock()
	l.servers[name] = s
	l.mu.Unlock()
}

// Shared reports whether a local server has a long-lived process.
func (l *Locals) Shared(name string) bool {
	s, ok := l.get(name)
	return ok && s.shared
}

// OnSessions is told each time a process of a held call of a server
// starts or ends: how many run now, of how many at most.
func (l *Locals) OnSessions(f func(server string, running, most int)) {
	l.mu.Lock()
	l.sessions = f
	l.mu.Unlock()
}

func (l *Locals) sessionsChanged(name string, s *local) {
	l.mu.Lock()
	f, running := l.sessions, len(s.held)
	l.mu.Unlock()
	if f != nil {
		f(name, running, cap(s.slots))
	}
}

// OnStderr is told each line any local server's processes write to their
// stderr.
func (l *Locals) OnStderr(f func(server, line string)) {
	l.mu.Lock()
	l.stderr = f
	l.mu.Unlock()
}

// Names lists the local servers.
func (l *Locals) Names() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.servers))
	for name := range l.servers {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func (l *Locals) get(name string) (*local, bool) {
	if l == nil {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.servers[name]
	return s, ok
}

// Start starts a new shared process of a local server and makes it the one
// requests go to.
func (l *Locals) Start(name string) (*Process, error) {
	s, ok := l.get(name)
	if !ok {
		return nil, fmt.Errorf("no local server %q", name)
	}
	p, err := l.startProcess(name, s.cmd, s.stderr)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	s.proc = p
	l.mu.Unlock()
	return p, nil
}

// Process returns the shared process of a local server, or nil.
func (l *Locals) Process(name string) *Process {
	s, ok := l.get(name)
	if !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return s.proc
}

// Busy says how many of a local server's per-session processes run, of
// how many it may run.
func (l *Locals) Busy(name string) (running, most int) {
	s, ok := l.get(name)
	if !ok {
		return 0, 0
	}
	return len(s.slots), cap(s.slots)
}

// Sessions lists the pids of a local server's processes that each hold
// one handshake-era session.
func (l *Locals) Sessions(name string) []int {
	s, ok := l.get(name)
	if !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int, 0, len(s.held))
	for pid := range s.held {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// ErrProcessesBusy is a handshake-era call that found all of its local
// server's processes busy with other calls.
var ErrProcessesBusy = errors.New("all of the server's processes are busy with other calls")

// ProcessExitedError is a local server's process that ended while a
// request or a session was open on it.
type ProcessExitedError struct {
	Server string
	Status string // how it ended: "exit status 1", "signal: killed"
}

func (e *ProcessExitedError) Error() string {
	return fmt.Sprintf("the process of server %s stopped (%s)", e.Server, e.Status)
}

// ProcessGoneError is an answer whose requestState was made by a process
// of a local server that is no longer running: only that process could
// open it, so it is refused as a server refuses an expired one
// (StateExpired).
type ProcessGoneError struct{ Server string }

func (e *ProcessGoneError) Error() string {
	return "the process of server " + e.Server + " that asked this question is no longer running"
}
