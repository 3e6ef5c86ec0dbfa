package store_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestSignOutHeardEverywhere: instances remember sessions, and a sign-out
// is not done until every live instance has forgotten them. Instance b is
// slow to hear of it: while it has not, it still knows the session, and
// the sign-out on a waits; once b hears, the session is gone on b too.
func TestSignOutHeardEverywhere(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var slow atomic.Bool
	gate := make(chan struct{})
	instance := func(id string, lag bool) *store.Store {
		n := store.NewNotifier(pool, log)
		if lag {
			// Registered before the cache's own, so the cache forgets late.
			n.OnAuthChanged(func() {
				if slow.Load() {
					<-gate
				}
			})
		}
		st, err := store.New(pool, store.Options{Notifier: n})
		if err != nil {
			t.Fatal(err)
		}
		n.OnAuthHeard(func(seq int64) {
			if err := st.AuthHeard(context.Background(), id, seq); err != nil {
				t.Error(err)
			}
		})
		nctx, stop := context.WithCancel(ctx)
		t.Cleanup(stop)
		go n.Run(nctx)
		eventually(t, 10*time.Second, func() error {
			if !n.Listening() {
				return errors.New("the notifier does not listen")
			}
			return nil
		})
		if err := st.Beat(ctx, store.Heartbeat{ID: id, Version: "test", StartedAt: time.Now(), Interval: time.Minute,
			AuthHeard: n.AuthHeard()}); err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := instance("a", false), instance("b", true)
	hear := sync.OnceFunc(func() {
		slow.Store(false)
		close(gate)
	})
	t.Cleanup(hear)

	ada, err := a.CreateUser(ctx, "ada", "ada's password", false)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := a.CreateSession(ctx, ada.ID, "test", "127.0.0.1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.UserBySession(ctx, secret); err != nil {
		t.Fatal("the session does not work on b:", err)
	}

	slow.Store(true)
	ended := make(chan error, 1)
	go func() { ended <- a.EndSession(ctx, secret) }()
	select {
	case err := <-ended:
		t.Fatalf("the sign-out was done before b heard of it (err %v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	// b has not heard: it still knows the session, which is why a waits.
	if _, _, err := b.UserBySession(ctx, secret); err != nil {
		t.Fatal("b forgot the session before it heard of its end:", err)
	}
	hear()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the sign-out still waits after b heard of it")
	}
	for _, st := range []*store.Store{a, b} {
		if _, _, err := st.UserBySession(ctx, secret); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the ended session still works: %v", err)
		}
	}
}
