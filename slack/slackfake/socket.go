package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// SocketPing is how often the fake's WebSocket pings its client, as Slack
// does; slack-go's socketmode reconnects when pings stop for 30 seconds.
const SocketPing = 5 * time.Second

// sockets is the Socket Mode side: the connections apps.connections.open
// handed out URLs for, and the envelopes waiting for an ack.
type sockets struct {
	f       *Fake
	mu      sync.Mutex
	conns   []*socketConn
	changed chan struct{} // closed and replaced when a connection comes or goes
	acks    map[string]chan json.RawMessage
	seq     int
}

type socketConn struct {
	ws      *websocket.Conn
	writeMu sync.Mutex
	done    chan struct{}
}

func newSockets(f *Fake) *sockets {
	return &sockets{f: f, changed: make(chan struct{}), acks: map[string]chan json.RawMessage{}}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// serve upgrades a connection, says hello, and reads acks until it closes.
func (s *sockets) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("ticket") == "" {
		http.Error(w, "no ticket", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &socketConn{ws: ws, done: make(chan struct{})}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	n := len(s.conns)
	s.mu.Unlock()
	hello := map[string]any{"type": "hello", "num_connections": n,
		"debug_info":      map[string]any{"host": "fake-slack", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": AppID}}
	if c.write(hello) != nil {
		s.drop(c)
		return
	}
	s.signal()
	go c.ping()
	s.read(c)
}

func (s *sockets) signal() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (c *socketConn) write(v any) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.ws.WriteJSON(v)
}

func (c *socketConn) ping() {
	t := time.NewTicker(SocketPing)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.writeMu.Lock()
			err := c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(5*time.Second))
			c.writeMu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// read takes the client's acks: {"envelope_id": …, "payload": …}.
func (s *sockets) read(c *socketConn) {
	defer s.drop(c)
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		s.mu.Lock()
		ch := s.acks[ack.EnvelopeID]
		delete(s.acks, ack.EnvelopeID)
		s.mu.Unlock()
		if ch != nil {
			ch <- ack.Payload
		}
	}
}

func (s *sockets) drop(c *socketConn) {
	s.mu.Lock()
	for i, x := range s.conns {
		if x == c {
			s.conns = append(s.conns[:i], s.conns[i+1:]...)
			close(c.done)
			break
		}
	}
	s.mu.Unlock()
	_ = c.ws.Close()
	s.signal()
}

func (s *sockets) closeAll() {
	s.mu.Lock()
	conns := append([]*socketConn(nil), s.conns...)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
}

// SocketConnections is how many Socket Mode clients are connected.
func (f *Fake) SocketConnections() int {
	f.socket.mu.Lock()
	defer f.socket.mu.Unlock()
	return len(f.socket.conns)
}

// WaitSocket waits until at least n Socket Mode clients are connected.
func (f *Fake) WaitSocket(ctx context.Context, n int) error {
	s := f.socket
	for {
		s.mu.Lock()
		have, changed := len(s.conns), s.changed
		s.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slackfake: %d Socket Mode connections, waiting for %d: %w", have, n, ctx.Err())
		case <-changed:
		}
	}
}

// ErrNoSocket is returned by SendSocket when no client is connected.
var ErrNoSocket = errors.New("slackfake: no Socket Mode connection")

// SendSocket delivers p over the newest Socket Mode connection in an
// "interactive" envelope and waits for the client's ack, whose payload it
// returns (a view_submission's reply, e.g. response_action errors; null or
// absent when the ack carried none). Slack waits 3 seconds; the fake waits
// on ctx, so a test can say how long is too long.
func (f *Fake) SendSocket(ctx context.Context, p Payload) (json.RawMessage, error) {
	s := f.socket
	s.mu.Lock()
	if len(s.conns) == 0 {
		s.mu.Unlock()
		return nil, ErrNoSocket
	}
	c := s.conns[len(s.conns)-1]
	s.seq++
	id := fmt.Sprintf("fake-envelope-%08d-%d", s.seq, time.Now().UnixNano())
	ch := make(chan json.RawMessage, 1)
	s.acks[id] = ch
	s.mu.Unlock()
	env := map[string]any{"envelope_id": id, "type": "interactive", "payload": p,
		"accepts_response_payload": p.Type() == "view_submission"}
	if err := c.write(env); err != nil {
		return nil, err
	}
	select {
	case ack := <-ch:
		f.afterReply(p, http.StatusOK, ack)
		return ack, nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.acks, id)
		s.mu.Unlock()
		return nil, fmt.Errorf("slackfake: no ack for envelope %s: %w", id, ctx.Err())
	}
}

// DisconnectSockets asks every client to reconnect, as Slack does before it
// closes a connection ("refresh_requested", "warning", "link_disabled").
func (f *Fake) DisconnectSockets(reason string) {
	s := f.socket
	s.mu.Lock()
	conns := append([]*socketConn(nil), s.conns...)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.write(map[string]any{"type": "disconnect", "reason": reason,
			"debug_info": map[string]any{"host": "fake-slack"}})
	}
}
