package engine

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// What a server says while it works on an agent's call (its progress, its
// log messages at the level the agent asked for) is told to the agent
// waiting on the call, on whichever instance holds its request, through
// the Notifier (store/call_events.go). Each is told as it comes, in order,
// by one goroutine per request; while Postgres is slower than the server,
// what waits is bounded, the oldest progress giving way first and the
// newest never. Storing the progress for the call's page stays throttled
// (progress.go): telling costs a notification, not a write.

// Bounds of what waits to be told; how often at most a request tells
// (a hundred a second: past that, progress coalesces); and how long a
// request that returned waits for what it queued to be told.
const (
	maxRelayQueued = 64
	maxRelayBytes  = 256 << 10
	relayEvery     = 10 * time.Millisecond
	relayFlush     = 2 * time.Second
)

// relay tells request seq's server notifications to the agent waiting on
// its call.
type relay struct {
	st   *store.Store
	call string
	seq  int

	mu      sync.Mutex
	queue   []store.CallEvent
	size    int
	count   int64
	started bool
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

// hear sets what srv's server says during request seq of call c to be
// heard: its progress stored for the call's page, and told with its log
// messages to the agent waiting on the call. done is called once the
// request has returned.
func (e *Engine) hear(srv *mcpclient.Server, c *store.Call, seq int) (done func()) {
	var stored func()
	srv.Progress, stored = e.progress(c.ID, seq)
	r := e.relayTo(c, seq)
	if r == nil {
		return stored
	}
	srv.Progress = r.progress(srv.Progress)
	if srv.LogLevel = c.Agent.LogLevel; srv.LogLevel != "" {
		srv.Log = r.log
	}
	return func() { r.close(); stored() }
}

// relayTo returns the relay of request seq of call c, or nil when no agent
// waits on it: a call started in Rounds, or a task, whose agent polls.
func (e *Engine) relayTo(c *store.Call, seq int) *relay {
	if c.Agent == nil || c.Agent.Task {
		return nil
	}
	return &relay{st: e.store, call: c.ID, seq: seq, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// progress tells a server's notifications/progress, with report told
// too (it stores the progress for the call's page).
func (r *relay) progress(report func(mcpclient.Progress)) func(mcpclient.Progress) {
	return func(p mcpclient.Progress) {
		report(p)
		if params, err := json.Marshal(p); err == nil {
			r.add(store.EventProgress, params)
		}
	}
}

// log tells a server's notifications/message.
func (r *relay) log(m mcpclient.LogMessage) {
	if params, err := json.Marshal(m); err == nil {
		r.add(store.EventLog, params)
	}
}

func (r *relay) add(method string, params json.RawMessage) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.count++
	ev := store.CallEvent{Call: r.call, Seq: r.seq, N: r.count, Method: method, Params: params}
	r.queue, r.size = store.AppendEvent(r.queue, r.size, ev, maxRelayQueued, maxRelayBytes)
	if !r.started {
		r.started = true
		go r.run()
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run tells what is queued, one at a time, in order, until closed.
func (r *relay) run() {
	defer close(r.done)
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			closed := r.closed
			r.mu.Unlock()
			if closed {
				return
			}
			<-r.wake
			continue
		}
		ev := r.queue[0]
		r.queue, r.size = r.queue[1:], r.size-len(ev.Params)
		r.mu.Unlock()
		told := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		_ = r.st.TellCallEvent(ctx, ev) // the agent then hears less, never wrong
		cancel()
		time.Sleep(time.Until(told.Add(relayEvery)))
	}
}

// close ends the relay once what is queued is told, or relayFlush has
// passed: the agent hears what the server said before the outcome.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	started := r.started
	r.mu.Unlock()
	if !started {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
	case <-time.After(relayFlush):
	}
}
