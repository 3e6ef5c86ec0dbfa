package mcpclient

// A local server's shared long-lived process (Process), which many
// requests use at once: each connection on it has its requests' ids
// rewritten to the process's own and gets its answers back.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Process is a running local server spoken to over its stdin and stdout
// (the go-sdk's IO transport), newline-delimited JSON-RPC. Many
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

func (l *Locals) startProcess(name string, c Command, stderr func(string)) (*Process, error) {
	ch, conn, err := l.startChild(c, stderr)
	if err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	p := &Process{ID: hex.EncodeToString(id[:]), PID: ch.pid, Started: time.Now(), server: name, conn: conn,
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
// stdio shutdown says: then SIGTERM, then SIGKILL, each to its whole
// process group.
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
