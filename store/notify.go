package store

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/queue"
)

// Notifier listens for call changes on one connection and wakes the
// requests waiting on them. Notifications come from a trigger on calls, so
// every instance hears every change. The same connection listens for
// River's workers too (see Relay): Postgres wakes every listening
// connection of the database for every notification, each waking costing
// a transaction, so an instance keeps one.
type Notifier struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	// relayed are the channels listened on for Relay, without the schema
	// that qualifies them.
	relayed []string

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]*CallNote
	// onAuth is called when users or tokens change, and whenever
	// notifications may have been missed.
	onAuth []func()
	// heard is the number of the last change to sign-ins heard (see
	// authCache), handed to onHeard after onAuth has run.
	heard   int64
	onHeard func(int64)
	// listening is false while the connection is down, so waiters fall
	// back to their own deadline instead of trusting silence.
	listening bool
	// up is closed once listening, and replaced when the connection goes.
	up chan struct{}
	// schema qualifies the relayed channels' names on this connection.
	schema string
	relays map[*Relay]struct{}
	// events are the requests watching calls' events (call_events.go);
	// self names this notifier, once idOnce has.
	events map[string]map[*Events]struct{}
	idOnce sync.Once
	self   string
}

// Notification is a notification heard for a Relay, on a channel named
// without its schema.
type Notification struct {
	Channel string
	Payload string
}

// JobsInserted is River's insert notification for the queue every job of
// Rounds runs on, as a Relay hands it on.
var JobsInserted = Notification{Channel: queue.InsertChannel, Payload: queue.InsertPayload}

// Relay hands on what the notifier hears on the channels it relays.
type Relay struct {
	n *Notifier
	// C receives the notifications; one that finds C full is dropped, and
	// its listener learns of the change by polling.
	C chan Notification
	// Lost is closed when the connection these came over is gone: what
	// was sent meanwhile went unheard.
	Lost chan struct{}
	// Schema qualifies the channels' names.
	Schema string
}

// NewNotifier returns a Notifier; Run starts it.
// Channels given in relayed (named without their schema, as River names
// them) are listened on too, for Relay.
func NewNotifier(pool *pgxpool.Pool, log *slog.Logger, relayed ...string) *Notifier {
	return &Notifier{pool: pool, log: log, relayed: relayed, up: make(chan struct{}),
		waiters: map[string]map[chan struct{}]*CallNote{}, relays: map[*Relay]struct{}{}}
}

// Relay waits until the notifier listens, and returns what it hears on
// the relayed channels from then on, until the connection goes (Lost).
func (n *Notifier) Relay(ctx context.Context) (*Relay, error) {
	for {
		n.mu.Lock()
		up, listening := n.up, n.listening
		if listening {
			r := &Relay{n: n, C: make(chan Notification, 1000), Lost: make(chan struct{}), Schema: n.schema}
			n.relays[r] = struct{}{}
			n.mu.Unlock()
			return r, nil
		}
		n.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-up:
		}
	}
}

// Relays reports whether channel (named without its schema) is relayed.
func (n *Notifier) Relays(channel string) bool {
	return slices.Contains(n.relayed, channel)
}

// Close stops the relay.
func (r *Relay) Close() {
	r.n.mu.Lock()
	delete(r.n.relays, r)
	r.n.mu.Unlock()
}

// relay hands a notification on a relayed channel to every relay.
func (n *Notifier) relay(channel, payload string) {
	name, ok := strings.CutPrefix(channel, n.schema+".")
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for r := range n.relays {
		select {
		case r.C <- Notification{Channel: name, Payload: payload}:
		default:
		}
	}
}

// hearOwn wakes the waiters of this instance's own commit with its notes,
// and tells the relays' listeners of jobs inserted. It reports whether
// one took that news: none does while the connection is down, when no
// River client listens here, or when its queue of notifications is full.
func (n *Notifier) hearOwn(notes []callNote, jobs bool) (relayed bool) {
	for _, note := range notes {
		n.wake(note.id, note.text)
	}
	if !jobs || !n.Relays(JobsInserted.Channel) {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for r := range n.relays {
		select {
		case r.C <- JobsInserted:
			relayed = true
		default:
		}
	}
	return relayed
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
	defer func() {
		// Do not hand a listening connection back to the pool.
		_ = conn.Conn().Close(context.Background())
	}()
	var schema string
	if err := conn.QueryRow(ctx, "select current_schema()").Scan(&schema); err != nil {
		return err
	}
	// Named, so that pg_stat_activity tells it apart.
	listen := "set application_name = 'rounds notifier'; listen call_changed; listen auth_changed; listen " + callEventChannel
	for _, ch := range n.relayed {
		listen += "; listen " + pgx.Identifier{schema + "." + ch}.Sanitize()
	}
	if _, err := conn.Exec(ctx, listen); err != nil {
		return err
	}
	// Every change to sign-ins from here on is heard: what came before is
	// forgotten (below), so all up to the last are heard.
	var last int64
	if err := conn.QueryRow(ctx, authChangesSQL).Scan(&last); err != nil {
		return err
	}
	n.mu.Lock()
	n.listening, n.schema = true, schema
	close(n.up)
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.listening = false
		n.up = make(chan struct{})
		for r := range n.relays {
			close(r.Lost)
			delete(n.relays, r)
		}
		n.mu.Unlock()
	}()
	n.wakeAll() // changes before we listened were not heard
	n.authChanged()
	n.authHeard(last)
	for {
		note, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			n.authChanged()
			return err
		}
		switch note.Channel {
		case "auth_changed":
			n.authChanged()
			if seq, err := strconv.ParseInt(note.Payload, 10, 64); err == nil {
				n.authHeard(seq)
			}
		case "call_changed":
			n.wake(noteID(note.Payload), note.Payload)
		case callEventChannel:
			n.heardEvent(note.Payload)
		default:
			n.relay(note.Channel, note.Payload)
		}
	}
}

// OnAuthChanged registers f to be called when users or API tokens change
// on any instance, and whenever such a change may have gone unheard.
func (n *Notifier) OnAuthChanged(f func()) {
	n.mu.Lock()
	n.onAuth = append(n.onAuth, f)
	n.mu.Unlock()
}

// OnAuthHeard registers f to be told the number of the last change to
// sign-ins this instance has heard, once its onAuth funcs have run for
// it. f runs on the listening goroutine, so changes are told in order.
func (n *Notifier) OnAuthHeard(f func(seq int64)) {
	n.mu.Lock()
	n.onHeard = f
	n.mu.Unlock()
}

// AuthHeard returns the number of the last change to sign-ins heard.
func (n *Notifier) AuthHeard() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.heard
}

func (n *Notifier) authHeard(seq int64) {
	n.mu.Lock()
	n.heard = max(n.heard, seq)
	f := n.onHeard
	n.mu.Unlock()
	if f != nil {
		f(seq)
	}
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
	Progress  json.RawMessage `json:"progress"`
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

// noteID returns the call a notification's payload is about, reading no
// further into a note than its first member, the call's id (call_note
// builds it first). A note in another shape is read whole.
func noteID(payload string) string {
	if !strings.HasPrefix(payload, "{") {
		return payload
	}
	dec := json.NewDecoder(strings.NewReader(payload))
	var key, id string
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		if tok, err := dec.Token(); err == nil {
			key, _ = tok.(string)
		}
		if tok, err := dec.Token(); err == nil {
			id, _ = tok.(string)
		}
	}
	if key == "id" && id != "" {
		return id
	}
	id, _ = parseNote(payload)
	return id
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

// wake wakes the requests waiting on call id with its note, payload.
// Every instance hears every call's note and few have a request waiting
// on it, so the whole note is read only where one waits.
func (n *Notifier) wake(id, payload string) {
	n.mu.Lock()
	waiting := len(n.waiters[id]) > 0
	n.mu.Unlock()
	if !waiting {
		return
	}
	_, note := parseNote(payload)
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
