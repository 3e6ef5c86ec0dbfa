package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// RiverTopics returns the channels to give store.NewNotifier, so that it
// can carry River's notifications (Config.Notifier).
func RiverTopics() []string { return queue.Topics() }

// sharedDriver is River's pgx driver with one change: its client hears its
// notifications through the instance's notifier instead of a connection
// of its own. Postgres wakes every listening connection of the database
// for each notification, and each waking is a transaction; with two
// listeners an instance paid twice for every announcement.
//
// River marks its listener interface as not yet stable; the release it is
// written for is queue.RiverVersion, and TestAnnouncedAfterCommit fails if
// its workers stop hearing of inserted jobs.
type sharedDriver struct {
	*riverpgxv5.Driver
	n *store.Notifier
}

func newDriver(pool *pgxpool.Pool, n *store.Notifier) riverdriver.Driver[pgx.Tx] {
	d := riverpgxv5.New(pool)
	if n == nil {
		return d
	}
	for _, t := range queue.Topics() {
		if !n.Relays(t) {
			return d // it would not hear River's channels
		}
	}
	return &sharedDriver{Driver: d, n: n}
}

func (d *sharedDriver) GetListener(*riverdriver.GetListenenerParams) riverdriver.Listener {
	return &sharedListener{n: d.n}
}

// sharedListener is River's listener over the notifier's connection.
type sharedListener struct {
	n *store.Notifier

	mu    sync.Mutex
	relay *store.Relay
}

var errNotConnected = errors.New("river listener: not connected")

// errConnectionLost tells River's notifier that notifications may have
// gone unheard: it connects again and looks for work meanwhile.
var errConnectionLost = errors.New("river listener: the notifier's connection was lost")

func (l *sharedListener) current() (*store.Relay, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.relay == nil {
		return nil, errNotConnected
	}
	return l.relay, nil
}

// Connect waits until the notifier listens. Jobs inserted while River was
// not listening went unannounced, so it is first told to look for work.
func (l *sharedListener) Connect(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.relay != nil {
		return errors.New("river listener: already connected")
	}
	r, err := l.n.Relay(ctx)
	if err != nil {
		return err
	}
	r.C <- store.JobsInserted
	l.relay = r
	return nil
}

func (l *sharedListener) Close(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.relay != nil {
		l.relay.Close()
		l.relay = nil
	}
	return nil
}

// Listen checks that the notifier listens on topic: it listens on River's
// channels from its start.
func (l *sharedListener) Listen(_ context.Context, topic string) error {
	if _, err := l.current(); err != nil {
		return err
	}
	if !l.n.Relays(topic) {
		return fmt.Errorf("river listener: the notifier does not listen on %q", topic)
	}
	return nil
}

func (l *sharedListener) Unlisten(context.Context, string) error { return nil }

// Ping fails once the notifier's connection is gone; the notifier itself
// notices a dead connection.
func (l *sharedListener) Ping(context.Context) error {
	r, err := l.current()
	if err != nil {
		return err
	}
	select {
	case <-r.Lost:
		return errConnectionLost
	default:
		return nil
	}
}

func (l *sharedListener) Schema() string {
	r, err := l.current()
	if err != nil {
		return ""
	}
	return r.Schema
}

func (l *sharedListener) SetAfterConnectExec(string) {}

func (l *sharedListener) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	r, err := l.current()
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.Lost:
		return nil, errConnectionLost
	case nt := <-r.C:
		return &riverdriver.Notification{Topic: nt.Channel, Payload: nt.Payload}, nil
	}
}
