package store

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Notifier listens for call changes on one connection and wakes the
// requests waiting on them. Notifications come from a trigger on calls, so
// every instance hears every change.
type Notifier struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	// up is closed while the listening connection is down, so waiters fall
	// back to their own deadline instead of trusting silence.
	listening bool
}

// NewNotifier returns a Notifier; Run starts it.
func NewNotifier(pool *pgxpool.Pool, log *slog.Logger) *Notifier {
	return &Notifier{pool: pool, log: log, waiters: map[string]map[chan struct{}]struct{}{}}
}

// Run listens until ctx ends, reconnecting after failures.
func (n *Notifier) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := n.listen(ctx); err != nil && ctx.Err() == nil {
			n.log.WarnContext(ctx, "call notifications interrupted; reconnecting", "err", err)
			n.wakeAll() // anything may have changed meanwhile
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (n *Notifier) listen(ctx context.Context) error {
	conn, err := n.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "listen call_changed"); err != nil {
		return err
	}
	defer func() {
		// Do not hand a listening connection back to the pool.
		_ = conn.Conn().Close(context.Background())
	}()
	n.mu.Lock()
	n.listening = true
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.listening = false
		n.mu.Unlock()
	}()
	n.wakeAll() // changes before we listened were not heard
	for {
		note, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		n.wake(note.Payload)
	}
}

// Listening reports whether notifications are flowing.
func (n *Notifier) Listening() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.listening
}

// Subscribe returns a channel that receives when call id changes, and a
// func to stop. Subscribe before reading the state you compare against, so
// no change falls between the read and the wait.
func (n *Notifier) Subscribe(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.waiters[id] == nil {
		n.waiters[id] = map[chan struct{}]struct{}{}
	}
	n.waiters[id][ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.waiters[id], ch)
		if len(n.waiters[id]) == 0 {
			delete(n.waiters, id)
		}
		n.mu.Unlock()
	}
}

func (n *Notifier) wake(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.waiters[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (n *Notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, set := range n.waiters {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
