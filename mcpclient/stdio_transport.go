package mcpclient

// How the client's requests reach a local server: the shared process for
// a 2026-07-28 request, or a process of its own for each handshake-era
// session (sessionConn), and a tap of the results it sends.

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
