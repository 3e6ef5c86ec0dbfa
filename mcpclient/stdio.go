package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LocalScheme starts the URL Rounds gives a server it runs as a local
// program over stdio: "stdio:notes". Such a URL is never fetched; the
// program is found in the Client's Locals by the name after the colon.
const LocalScheme = "stdio:"

// LocalName returns the name of a local server's URL.
func LocalName(url string) (string, bool) { return strings.CutPrefix(url, LocalScheme) }

// Locals are the local servers an instance runs. Each may have one
// long-lived process, started and restarted by its owner (the engine),
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

// sessionConn is the connection of a process of its own, for one
// handshake-era session: its elicitations and sampling requests pass the
// wire as they would over HTTP (their params kept raw, our answers sent
// byte for byte), and closing it stops the process and frees its place.
type sessionConn struct {
	mcp.Connection
	w       *wire
	release func()
	once    sync.Once
	server  string
	exited  atomic.Pointer[ProcessExitedError]
}

func (sc *sessionConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := sc.Connection.Read(ctx)
	if err != nil {
		if ctx.Err() == nil {
			// Close waits for the process (once, whoever calls it).
			status := exitStatus(err, sc.Connection.Close())
			sc.exited.CompareAndSwap(nil, &ProcessExitedError{Server: sc.server, Status: status})
		}
		return nil, err
	}
	if r, ok := m.(*jsonrpc.Request); ok && sc.w.held && r.ID.IsValid() {
		raw, err := jsonrpc.EncodeMessage(r)
		if err == nil {
			if out := sc.w.seen(raw); !bytes.Equal(out, raw) {
				if msg, err := jsonrpc.DecodeMessage(out); err == nil {
					return msg, nil
				}
			}
		}
	}
	return m, nil
}

func (sc *sessionConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Response); ok && sc.w.held && r.Error == nil {
		id := idKey(r.ID)
		sc.w.mu.Lock()
		raw, found := sc.w.answers[id]
		delete(sc.w.answers, id)
		delete(sc.w.asked, id)
		sc.w.mu.Unlock()
		if found {
			out := *r
			out.Result = raw
			m = &out
		}
	}
	return sc.Connection.Write(ctx, m)
}

func (sc *sessionConn) Close() error {
	err := sc.Connection.Close()
	sc.once.Do(sc.release)
	return err
}

// sessionTransport starts a process of its own for one session.
type sessionTransport struct{ conn *sessionConn }

func (t sessionTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// localTransport is the transport of a local server: the shared process
// for a 2026-07-28 request or session, or a process of its own for any
// other (a handshake-era call, or finding out which revision it speaks).
func (c *Client) localTransport(ctx context.Context, name, protocol string, w *wire, t *tap) (mcp.Transport, error) {
	s, ok := c.locals.get(name)
	if !ok {
		return nil, &UnreachableError{Err: fmt.Errorf("no local server %q is configured on this instance", name)}
	}
	if protocol >= ProtocolStateless {
		p, err := c.sharedProcess(name)
		if err != nil {
			return nil, err
		}
		if t != nil {
			return tappedTransport{base: p, tap: t}, nil
		}
		return p, nil
	}
	// Half the request timeout: a job that waited in vain still has time
	// to say so before its own timeout.
	wait, cancel := context.WithTimeout(ctx, c.timeout/2)
	defer cancel()
	select {
	case s.slots <- struct{}{}:
	case <-wait.Done():
		return nil, ErrProcessesBusy
	}
	ch, conn, err := c.locals.startChild(s.cmd, s.stderr)
	if err != nil {
		<-s.slots
		return nil, &UnreachableError{Err: fmt.Errorf("starting the server's program: %w", err)}
	}
	pid := ch.pid
	c.locals.mu.Lock()
	s.held[pid] = true
	c.locals.mu.Unlock()
	c.locals.sessionsChanged(name, s)
	release := func() {
		c.locals.mu.Lock()
		delete(s.held, pid)
		c.locals.mu.Unlock()
		<-s.slots
		c.locals.sessionsChanged(name, s)
	}
	w.local = &sessionConn{Connection: conn, w: w, release: release, server: name}
	if t != nil {
		return tappedTransport{base: sessionTransport{conn: w.local}, tap: t}, nil
	}
	return sessionTransport{conn: w.local}, nil
}

// tappedTransport keeps a copy of each result a local server sends, as
// the tap keeps HTTP bodies: its tools as it wrote them.
type tappedTransport struct {
	base mcp.Transport
	tap  *tap
}

func (tt tappedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := tt.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tappedConn{Connection: conn, tap: tt.tap}, nil
}

type tappedConn struct {
	mcp.Connection
	tap *tap
}

func (tc *tappedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := tc.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && err == nil && r.Result != nil {
		buf := &bytes.Buffer{}
		buf.WriteString(`{"result":`)
		buf.Write(r.Result)
		buf.WriteString(`}`)
		tc.tap.mu.Lock()
		tc.tap.bufs = append(tc.tap.bufs, buf)
		tc.tap.mu.Unlock()
	}
	return m, err
}

// sharedProcess is a local server's running long-lived process.
func (c *Client) sharedProcess(name string) (*Process, error) {
	if _, ok := c.locals.get(name); !ok {
		return nil, &UnreachableError{Err: fmt.Errorf("no local server %q is configured on this instance", name)}
	}
	p := c.locals.Process(name)
	if p == nil {
		return nil, &UnreachableError{Err: fmt.Errorf("the process of server %s is not running on this instance", name)}
	}
	select {
	case <-p.done:
		return nil, &UnreachableError{Err: p.err}
	default:
	}
	return p, nil
}

// exited is the end of a session's own process, if it ended while open.
func (w *wire) exited() error {
	if w.local == nil {
		return nil
	}
	if e := w.local.exited.Load(); e != nil {
		return e
	}
	return nil
}
