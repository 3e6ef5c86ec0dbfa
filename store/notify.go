package store

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
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
	waiters map[string]map[chan struct{}]*CallNote
	// onAuth is called when users or tokens change, and whenever
	// notifications may have been missed.
	onAuth []func()
	// up is closed while the listening connection is down, so waiters fall
	// back to their own deadline instead of trusting silence.
	listening bool
}

// NewNotifier returns a Notifier; Run starts it.
func NewNotifier(pool *pgxpool.Pool, log *slog.Logger) *Notifier {
	return &Notifier{pool: pool, log: log, waiters: map[string]map[chan struct{}]*CallNote{}}
}

// Run listens until ctx ends, reconnecting after failures.
func (n *Notifier) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := n.listen(ctx); err != nil && ctx.Err() == nil {
			n.log.WarnContext(ctx, "call notifications interrupted; reconnecting", "err", err)
			n.wakeAll() // anything may have changed meanwhile
			n.authChanged()
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
	if _, err := conn.Exec(ctx, "listen call_changed; listen auth_changed"); err != nil {
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
	n.authChanged()
	for {
		note, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			n.authChanged()
			return err
		}
		if note.Channel == "auth_changed" {
			n.authChanged()
			continue
		}
		n.wake(note.Payload)
	}
}

// OnAuthChanged registers f to be called when users or API tokens change
// on any instance, and whenever such a change may have gone unheard.
func (n *Notifier) OnAuthChanged(f func()) {
	n.mu.Lock()
	n.onAuth = append(n.onAuth, f)
	n.mu.Unlock()
}

func (n *Notifier) authChanged() {
	n.mu.Lock()
	fs := n.onAuth
	n.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// CallNote is what a call's change notification says: the call's state
// and, when it waits for answers, its current round (without its
// requestState). Partial notes carry the id and state only.
type CallNote struct {
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	Seq       int             `json:"seq"`
	Error     *string         `json:"error"`
	Retryable bool            `json:"retryable"`
	UpdatedAt time.Time       `json:"updated_at"`
	Result    json.RawMessage `json:"result"`
	Round     *NoteRound      `json:"round"`
	Partial   bool            `json:"partial"`
}

// NoteRound is a round as a change notification carries it.
type NoteRound struct {
	Seq           int             `json:"seq"`
	InputRequests json.RawMessage `json:"input_requests"`
	ExpiresAt     time.Time       `json:"expires_at"`
	Status        string          `json:"status"`
	Held          bool            `json:"held"`
}

// parseNote reads a notification's payload: a JSON note, or (from before
// notes carried state) a bare call id.
func parseNote(payload string) (string, *CallNote) {
	if !strings.HasPrefix(payload, "{") {
		return payload, nil
	}
	var note CallNote
	if err := json.Unmarshal([]byte(payload), &note); err != nil || note.ID == "" {
		return "", nil
	}
	if note.Result != nil && string(note.Result) == "null" {
		note.Result = nil
	}
	return note.ID, &note
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
	ch, _, stop := n.Watch(id)
	return ch, stop
}

// Watch is Subscribe, with a func that returns the latest note heard for
// the call since the last time it was asked (nil when none, or when a
// change may have gone unheard: then read the call).
func (n *Notifier) Watch(id string) (<-chan struct{}, func() *CallNote, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.waiters[id] == nil {
		n.waiters[id] = map[chan struct{}]*CallNote{}
	}
	n.waiters[id][ch] = nil
	n.mu.Unlock()
	latest := func() *CallNote {
		n.mu.Lock()
		defer n.mu.Unlock()
		note := n.waiters[id][ch]
		if note != nil {
			n.waiters[id][ch] = nil
		}
		return note
	}
	return ch, latest, func() {
		n.mu.Lock()
		delete(n.waiters[id], ch)
		if len(n.waiters[id]) == 0 {
			delete(n.waiters, id)
		}
		n.mu.Unlock()
	}
}

func (n *Notifier) wake(payload string) {
	id, note := parseNote(payload)
	if note != nil && note.Partial {
		note = nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.waiters[id] {
		n.waiters[id][ch] = note
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
			set[ch] = nil // unheard changes: the waiter reads
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
