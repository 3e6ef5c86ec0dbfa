package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestCallEventsReachEveryInstance: what a server says during a call,
// told on the instance that talks to it, reaches the request watching the
// call on another instance, each event once and in order; a watcher of
// another call hears none of it, nor does a watch that stopped.
func TestCallEventsReachEveryInstance(t *testing.T) {
	pool := storetest.NewPool(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	listening := func() (*store.Store, *store.Notifier) {
		n := store.NewNotifier(pool, log)
		st, err := store.New(pool, store.Options{Notifier: n})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		t.Cleanup(stop)
		go n.Run(ctx)
		eventually(t, 10*time.Second, func() error {
			if !n.Listening() {
				return errors.New("the notifier does not listen")
			}
			return nil
		})
		return st, n
	}
	st, server := listening()
	_, agent := listening()
	here := server.WatchEvents("c1")
	defer here.Stop()
	there := agent.WatchEvents("c1")
	defer there.Stop()
	other := agent.WatchEvents("c2")
	defer other.Stop()
	gone := agent.WatchEvents("c1")
	gone.Stop()

	var want []int64
	for i := range 20 {
		method, params := store.EventProgress, fmt.Sprintf(`{"progress":%d,"total":20}`, i)
		if i%5 == 0 {
			method, params = store.EventLog, fmt.Sprintf(`{"level":"info","data":"step %d"}`, i)
		}
		ev := store.CallEvent{Call: "c1", Seq: 0, N: int64(i + 1), Method: method, Params: json.RawMessage(params)}
		if err := st.TellCallEvent(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, ev.N)
	}
	heard := func(w *store.Events) []int64 {
		var ns []int64
		for _, ev := range w.Take() {
			ns = append(ns, ev.N)
		}
		return ns
	}
	// The instance that told them heard them at once.
	if got := heard(here); !slices.Equal(got, want) {
		t.Errorf("the telling instance heard %v, want %v", got, want)
	}
	var got []int64
	eventually(t, 10*time.Second, func() error {
		got = append(got, heard(there)...)
		if len(got) < len(want) {
			return fmt.Errorf("the other instance heard %v", got)
		}
		return nil
	})
	if !slices.Equal(got, want) {
		t.Errorf("the other instance heard %v, want %v", got, want)
	}
	if n := len(other.Take()) + len(gone.Take()); n > 0 {
		t.Errorf("%d events reached watchers of another call, or a stopped watch", n)
	}
}

// TestAppendEventBounds: past its bounds, a queue of events drops the
// oldest progress first, then the oldest log message, and keeps the newest.
func TestAppendEventBounds(t *testing.T) {
	ev := func(n int64, method string) store.CallEvent {
		return store.CallEvent{N: n, Method: method, Params: json.RawMessage(`{"progress":1}`)}
	}
	var held []store.CallEvent
	size := 0
	for n, m := range []string{store.EventLog, store.EventProgress, store.EventLog, store.EventProgress, store.EventProgress} {
		held, size = store.AppendEvent(held, size, ev(int64(n+1), m), 3, 1<<20)
	}
	var ns []int64
	for _, e := range held {
		ns = append(ns, e.N)
	}
	if want := []int64{1, 3, 5}; !slices.Equal(ns, want) {
		t.Errorf("kept %v, want %v (both logs and the last progress)", ns, want)
	}
	held, _ = store.AppendEvent(held, size, ev(6, store.EventLog), 3, 1<<20)
	ns = ns[:0]
	for _, e := range held {
		ns = append(ns, e.N)
	}
	if want := []int64{1, 3, 6}; !slices.Equal(ns, want) {
		t.Errorf("kept %v, want %v", ns, want)
	}
	held, size = store.AppendEvent(nil, 0, ev(1, store.EventLog), 10, 20)
	held, _ = store.AppendEvent(held, size, ev(2, store.EventLog), 10, 20)
	if len(held) != 1 || held[0].N != 2 {
		t.Errorf("past the bytes bound kept %+v, want the newest alone", held)
	}
}
