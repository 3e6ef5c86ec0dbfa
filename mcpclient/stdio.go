package mcpclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LocalScheme starts the URL Rounds gives a server it runs as a local
// program over stdio: "stdio:notes". Such a URL is never fetched; the
// program is found in the Client's Locals by the name after the colon.
const LocalScheme = "stdio:"

// LocalName returns the name of a local server's URL.
func LocalName(url string) (string, bool) { return strings.CutPrefix(url, LocalScheme) }

// Command is how a local server is started: a program and its arguments,
// never through a shell, with exactly the environment Env (KEY=VALUE) in
// the directory Dir.
type Command struct {
	Path string
	Args []string
	Env  []string
	Dir  string
}

func (c Command) cmd() *exec.Cmd {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = append([]string{}, c.Env...) // never nil: nil would pass on all of ours
	cmd.Dir = c.Dir
	// A program that leaves a child holding its pipes is not waited on
	// for ever.
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// Locals are the local servers an instance runs. Each may have one
// long-lived process, started and restarted by its owner (the engine),
// that 2026-07-28 requests share; a handshake-era session gets a process
// of its own, at most MaxProcesses of them at once.
type Locals struct {
	mu       sync.Mutex
	servers  map[string]*local
	stderr   func(server, line string)
	sessions func(server string, running, most int)
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
	p, err := startProcess(name, s.cmd, s.stderr)
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

// Process is a running local server spoken to over its stdin and stdout
// (the go-sdk's command transport), newline-delimited JSON-RPC. Many
// requests share it: each connection made on it has its requests' ids
// rewritten to ones of the process's own, and gets their answers back.
type Process struct {
	ID      string // a random name of this start of the program
	PID     int
	Started time.Time
	server  string

	conn mcp.Connection
	done chan struct{}
	err  error // how it ended, once done is closed

	mu      sync.Mutex
	next    int64
	waiting map[string]*virtualConn // by the id written to the process
	conns   map[*virtualConn]bool
}

func startProcess(name string, c Command, stderr func(string)) (*Process, error) {
	cmd := c.cmd()
	cmd.Stderr = &lineWriter{line: stderr}
	conn, err := (&mcp.CommandTransport{Command: cmd, TerminateDuration: 3 * time.Second}).Connect(context.Background())
	if err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	p := &Process{ID: hex.EncodeToString(id[:]), PID: cmd.Process.Pid, Started: time.Now(), server: name, conn: conn,
		done: make(chan struct{}), waiting: map[string]*virtualConn{}, conns: map[*virtualConn]bool{}}
	go p.read()
	return p, nil
}

// Done is closed when the process has ended; Err then says how.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err says how the process ended, once Done is closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Stop closes the process's stdin and waits for it to end, as the spec's
// stdio shutdown says: then SIGTERM, then SIGKILL.
func (p *Process) Stop() {
	_ = p.conn.Close()
	<-p.done
}

// read hands each message of the process to the connection it answers.
func (p *Process) read() {
	for {
		msg, err := p.conn.Read(context.Background())
		if err != nil {
			status := exitStatus(err, p.conn.Close()) // reaps the process
			p.mu.Lock()
			p.err = &ProcessExitedError{Server: p.server, Status: status}
			p.mu.Unlock()
			close(p.done)
			return
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			key := idKey(m.ID)
			p.mu.Lock()
			vc := p.waiting[key]
			delete(p.waiting, key)
			p.mu.Unlock()
			if vc != nil {
				vc.deliver(vc.restore(m))
			}
		case *jsonrpc.Request:
			if m.ID.IsValid() {
				// A request of the server's between requests of ours:
				// a ping is answered; there is nobody to ask anything else.
				resp := &jsonrpc.Response{ID: m.ID, Result: json.RawMessage(`{}`)}
				if m.Method != "ping" {
					resp = &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
						Message: "this client does not take " + m.Method + " outside a held session"}}
				}
				_ = p.conn.Write(context.Background(), resp)
				continue
			}
			// A notification (progress, logging) goes to every open
			// connection; each keeps what is its own.
			p.mu.Lock()
			for vc := range p.conns {
				vc.deliver(m)
			}
			p.mu.Unlock()
		}
	}
}

// Connect opens a connection on the process, as the go-sdk's transports do.
func (p *Process) Connect(context.Context) (mcp.Connection, error) {
	select {
	case <-p.done:
		return nil, p.err
	default:
	}
	vc := &virtualConn{p: p, in: make(chan jsonrpc.Message, 16), closed: make(chan struct{}), ids: map[string]jsonrpc.ID{}}
	p.mu.Lock()
	p.conns[vc] = true
	p.mu.Unlock()
	return vc, nil
}

// virtualConn is one connection's share of a process.
type virtualConn struct {
	p      *Process
	in     chan jsonrpc.Message
	closed chan struct{}
	once   sync.Once

	mu  sync.Mutex
	ids map[string]jsonrpc.ID // our ids as written to the process, to the connection's own
}

func (vc *virtualConn) deliver(m jsonrpc.Message) {
	select {
	case vc.in <- m:
	case <-vc.closed:
	default:
		// A connection that reads nothing more loses notifications, never
		// a response: those it waits for are read promptly.
		if _, ok := m.(*jsonrpc.Response); ok {
			select {
			case vc.in <- m:
			case <-vc.closed:
			}
		}
	}
}

func (vc *virtualConn) restore(m *jsonrpc.Response) *jsonrpc.Response {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	key := idKey(m.ID)
	if own, ok := vc.ids[key]; ok {
		delete(vc.ids, key)
		out := *m
		out.ID = own
		return &out
	}
	return m
}

func (vc *virtualConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-vc.in:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-vc.closed:
		return nil, errors.New("connection closed")
	case <-vc.p.done:
		select { // what came before the end is still read
		case m := <-vc.in:
			return m, nil
		default:
		}
		return nil, vc.p.err
	}
}

func (vc *virtualConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.ID.IsValid() {
		p := vc.p
		p.mu.Lock()
		p.next++
		wireID, _ := jsonrpc.MakeID(fmt.Sprintf("rounds-%s-%d", p.ID[:8], p.next))
		p.waiting[idKey(wireID)] = vc
		p.mu.Unlock()
		vc.mu.Lock()
		vc.ids[idKey(wireID)] = r.ID
		vc.mu.Unlock()
		out := *r
		out.ID = wireID
		m = &out
	}
	select {
	case <-vc.p.done:
		return vc.p.err
	default:
	}
	return vc.p.conn.Write(ctx, m)
}

func (vc *virtualConn) Close() error {
	vc.once.Do(func() {
		close(vc.closed)
		p := vc.p
		var pending []string
		p.mu.Lock()
		delete(p.conns, vc)
		vc.mu.Lock()
		for key := range vc.ids {
			if _, waiting := p.waiting[key]; waiting {
				pending = append(pending, key)
			}
			delete(p.waiting, key)
		}
		vc.mu.Unlock()
		p.mu.Unlock()
		// A request given up before its answer (the person pressed Stop,
		// or it timed out) is cancelled as stdio says: with
		// notifications/cancelled, since the process goes on.
		for _, key := range pending {
			params := []byte(`{"requestId":` + key + `,"reason":"The client stopped waiting for this request."}`)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = p.conn.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
			cancel()
		}
	})
	return nil
}

func (vc *virtualConn) SessionID() string { return "" }

func idKey(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
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
	cmd := s.cmd.cmd()
	cmd.Stderr = &lineWriter{line: s.stderr}
	conn, err := (&mcp.CommandTransport{Command: cmd, TerminateDuration: 3 * time.Second}).Connect(ctx)
	if err != nil {
		<-s.slots
		return nil, &UnreachableError{Err: fmt.Errorf("starting the server's program: %w", err)}
	}
	pid := cmd.Process.Pid
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

// exitStatus says how a process ended: from what reading its stdout
// failed with, and what waiting for it returned. A program that writes
// anything but JSON-RPC messages to stdout breaks the stdio transport, and
// is stopped for it.
func exitStatus(read, wait error) string {
	status := "exit status 0"
	if wait != nil {
		status = wait.Error()
	}
	ended := errors.Is(read, io.EOF) || errors.Is(read, io.ErrUnexpectedEOF) || errors.Is(read, os.ErrClosed) || errors.Is(read, io.ErrClosedPipe)
	if read != nil && !ended {
		status = "it wrote to stdout what is not a JSON-RPC message (" + read.Error() + "), and was stopped: " + status
	}
	return status
}

// stderrText is a line of a program's stderr as text that may be logged
// and stored: valid UTF-8, without NULs (which Postgres text refuses).
func stderrText(b []byte) string {
	return strings.ToValidUTF8(strings.ReplaceAll(string(b), "\x00", ""), "\uFFFD")
}

// lineWriter hands on what a process writes, line by line.
type lineWriter struct {
	line func(string)
	mu   sync.Mutex
	buf  []byte
}

// maxStderrLine bounds a line of a process's stderr that is handed on.
const maxStderrLine = 4096

func (lw *lineWriter) Write(b []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.buf = append(lw.buf, b...)
	for {
		i := bytes.IndexByte(lw.buf, '\n')
		if i < 0 {
			if len(lw.buf) > maxStderrLine {
				lw.line(stderrText(lw.buf[:maxStderrLine]))
				lw.buf = lw.buf[:0]
			}
			return len(b), nil
		}
		line := bytes.TrimRight(lw.buf[:i], "\r")
		if len(line) > maxStderrLine {
			line = line[:maxStderrLine]
		}
		lw.line(stderrText(line))
		lw.buf = lw.buf[i+1:]
	}
}
