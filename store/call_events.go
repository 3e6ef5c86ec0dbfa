package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"sync"
)

// A server's notifications during a request (its progress, its log
// messages) are told to the agent waiting on the call, on whichever
// instance holds the agent's request: the instance that talks to the
// server sends each as a notification on call_event, and every instance
// hands those of a call to the requests watching its events. Nothing of
// them is written to a table: what is kept is the notification queue's,
// and each watcher's, bounded.

// callEventChannel is the channel call events go on.
const callEventChannel = "call_event"

// CallEvent is a notification a server sent during request Seq of a call,
// in the order it came (N), for the agent waiting on the call: Method is
// notifications/progress or notifications/message, and Params what the
// server said, bounded by the MCP client.
type CallEvent struct {
	Call   string          `json:"call"`
	Seq    int             `json:"seq"`
	N      int64           `json:"n"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// From names the notifier that told it, which hands it on at once
	// rather than when it hears it back.
	From string `json:"from,omitempty"`
}

// Progress and log events' methods.
const (
	EventProgress = "notifications/progress"
	EventLog      = "notifications/message"
)

// maxEventPayload keeps a notification under Postgres' 8000 bytes.
const maxEventPayload = 7900

// Bounds of what a watcher keeps until its request takes it.
const (
	maxEventsHeld     = 256
	maxEventBytesHeld = 512 << 10
)

// TellCallEvent hands ev to the requests watching its call's events, on
// this instance at once (its Notifier's) and on every other through
// Postgres. An event too large for a notification is not told.
func (s *Store) TellCallEvent(ctx context.Context, ev CallEvent) error {
	n := s.announcer.own
	if n != nil {
		ev.From = n.id()
	}
	payload, err := json.Marshal(ev)
	if err != nil || len(payload) > maxEventPayload {
		return err
	}
	if n != nil {
		n.hand(ev)
	}
	_, err = s.pool.Exec(ctx, `select pg_notify($1, $2)`, callEventChannel, string(payload))
	return err
}

// id names this notifier among the instances'.
func (n *Notifier) id() string {
	n.idOnce.Do(func() { n.self = rand.Text() })
	return n.self
}

// heardEvent hands on an event heard on call_event, unless this notifier
// told it (and so handed it on already).
func (n *Notifier) heardEvent(payload string) {
	n.mu.Lock()
	none := len(n.events) == 0
	n.mu.Unlock()
	if none { // most instances hold no agent's request
		return
	}
	var ev CallEvent
	if json.Unmarshal([]byte(payload), &ev) != nil || ev.Call == "" || ev.From == n.id() {
		return
	}
	n.hand(ev)
}

// hand gives ev to each watcher of its call's events.
func (n *Notifier) hand(ev CallEvent) {
	n.mu.Lock()
	watchers := make([]*Events, 0, len(n.events[ev.Call]))
	for w := range n.events[ev.Call] {
		watchers = append(watchers, w)
	}
	n.mu.Unlock()
	for _, w := range watchers {
		w.add(ev)
	}
}

// Events is one request's watch of a call's events.
type Events struct {
	// C receives when events are waiting to be taken.
	C    chan struct{}
	stop func()

	mu    sync.Mutex
	held  []CallEvent
	bytes int
}

// WatchEvents starts watching call id's events; Stop ends it. Watch before
// the call's request is sent, so that none goes by.
func (n *Notifier) WatchEvents(id string) *Events {
	w := &Events{C: make(chan struct{}, 1)}
	n.mu.Lock()
	if n.events == nil {
		n.events = map[string]map[*Events]struct{}{}
	}
	if n.events[id] == nil {
		n.events[id] = map[*Events]struct{}{}
	}
	n.events[id][w] = struct{}{}
	n.mu.Unlock()
	w.stop = func() {
		n.mu.Lock()
		delete(n.events[id], w)
		if len(n.events[id]) == 0 {
			delete(n.events, id)
		}
		n.mu.Unlock()
	}
	return w
}

// Stop ends the watch.
func (w *Events) Stop() { w.stop() }

// Take returns the events heard since last taken, in order.
func (w *Events) Take() []CallEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.held
	w.held, w.bytes = nil, 0
	return held
}

// add keeps ev. Past the bounds, the oldest progress gives way (a later
// one says more), else the oldest event: the newest is always kept.
func (w *Events) add(ev CallEvent) {
	w.mu.Lock()
	w.held, w.bytes = AppendEvent(w.held, w.bytes, ev, maxEventsHeld, maxEventBytesHeld)
	w.mu.Unlock()
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// AppendEvent appends ev to held (size bytes of params), and drops what
// it must to stay within count and limit: the oldest progress first, else
// the oldest event, never ev.
func AppendEvent(held []CallEvent, size int, ev CallEvent, count, limit int) ([]CallEvent, int) {
	held, size = append(held, ev), size+len(ev.Params)
	for len(held) > 1 && (len(held) > count || size > limit) {
		drop := 0
		for i, e := range held[:len(held)-1] {
			if e.Method == EventProgress {
				drop = i
				break
			}
		}
		size -= len(held[drop].Params)
		held = append(held[:drop], held[drop+1:]...)
	}
	return held, size
}
