package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestAnnouncedAfterCommit: a round's transactions do not notify in their
// commit; what they change is announced after it. The workers still hear
// of every job at once (River's own poll is an hour here, so a job nobody
// announced would wait for it), and a waiter hears each change with the
// round it brought, without reading the call. River hears of jobs on the
// notifier's connection, the instance's only listening one, and again
// after that connection is cut.
func TestAnnouncedAfterCommit(t *testing.T) {
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	srv := httptest.NewServer(demo.Handler(demo.Options{Secret: []byte("announce test secret")}))
	t.Cleanup(srv.Close)
	server, err := st.UpsertServer(ctx, "demo", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	notifier := store.NewNotifier(pool, log, engine.RiverTopics()...)
	nctx, stopNotifier := context.WithCancel(ctx)
	t.Cleanup(stopNotifier)
	go notifier.Run(nctx)
	// The engine's first look for jobs is at its start; every later job
	// has to be announced.
	startEngine(t, pool, st, mcpclient.New(mcpclient.Options{}), engine.Config{FetchPollInterval: time.Hour,
		Capabilities: mcpclient.Capabilities{FormElicitation: true}, Notifier: notifier}, log)
	eventually(t, 10*time.Second, func() error {
		if !notifier.Listening() {
			return errors.New("the notifier does not listen")
		}
		return nil
	})
	// Past the engine's first fetch: a call it has run shows it fetched.
	probe, err := st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool,
		Target: "book_flight", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, st, probe.ID, store.CallInputRequired, 1)

	start := func() (*store.Call, <-chan struct{}, func() *store.CallNote) {
		t.Helper()
		id := store.NewCallID()
		notes, latest, stop := notifier.Watch(id)
		t.Cleanup(stop)
		call, err := st.CreateCall(ctx, store.NewCall{ID: id, ServerID: server.ID, Owner: "ada", Method: mcpclient.MethodCallTool,
			Target: "book_flight", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return call, notes, latest
	}
	call, notes, latest := start()
	next := func(want string, seq int) *store.CallNote {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case <-notes:
			case <-timeout:
				c, _ := st.Call(ctx, call.ID)
				if c.Error == nil {
					c.Error = new("")
				}
				t.Fatalf("no note of %s round %d heard; the call is %s at round %d: %v", want, seq, c.Status, c.CurrentSeq, *c.Error)
			}
			if n := latest(); n != nil && n.Status == want && n.Seq == seq {
				return n
			}
		}
	}
	first := next(store.CallInputRequired, 1)
	if first.Round == nil || first.Round.Seq != 1 || !json.Valid(first.Round.InputRequests) {
		t.Fatalf("the note of round 1 carries no round: %+v", first)
	}
	_, _, err = st.AnswerChecked(ctx, store.Answer{CallID: call.ID, Seq: 1, Person: "ada",
		Decide: func(store.Answering) (store.Decision, error) {
			return store.Decision{By: "ada", Responses: json.RawMessage(
				`{"trip":{"action":"accept","content":{"destination":"Lisbon","date":"2031-05-04"}},"party":{"action":"accept","content":{"passengers":2}}}`)}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	second := next(store.CallInputRequired, 2)
	if second.Round == nil || second.Round.Seq != 2 {
		t.Fatalf("the note of round 2 carries no round: %+v", second)
	}
	_, _, err = st.AnswerChecked(ctx, store.Answer{CallID: call.ID, Seq: 2, Person: "ada",
		Decide: func(store.Answering) (store.Decision, error) {
			return store.Decision{By: "ada", Responses: json.RawMessage(`{"seat":{"action":"accept","content":{"class":"business"}}}`)}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := next(store.CallComplete, 2)
	if len(done.Result) == 0 {
		t.Fatalf("the note of the result carries none: %+v", done)
	}

	// One connection listens, for the notifier and River both.
	rows, _ := pool.Query(ctx, `select application_name || ': ' || query from pg_stat_activity
		where datname = current_database() and (query ilike 'listen%' or application_name = 'rounds notifier')`)
	listeners, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(listeners) != 1 || !strings.HasPrefix(listeners[0], "rounds notifier: ") {
		t.Fatalf("listening connections: %q, want the notifier's alone", listeners)
	}
	// Cut it: both hear again once it is back.
	var cut int
	if err := pool.QueryRow(ctx, `select pg_terminate_backend(pid)::int * pid from pg_stat_activity
		where datname = current_database() and application_name = 'rounds notifier'`).Scan(&cut); err != nil || cut == 0 {
		t.Fatal("cutting the notifier's connection:", err)
	}
	eventually(t, 10*time.Second, func() error {
		var back bool
		if err := pool.QueryRow(ctx, `select exists (select from pg_stat_activity
			where datname = current_database() and application_name = 'rounds notifier' and pid <> $1)`, cut).Scan(&back); err != nil {
			t.Fatal(err)
		}
		if !back || !notifier.Listening() {
			return errors.New("the notifier did not listen again")
		}
		return nil
	})
	call, notes, latest = start()
	if again := next(store.CallInputRequired, 1); again.Round == nil {
		t.Fatalf("the note of the round after the cut carries no round: %+v", again)
	}
}
