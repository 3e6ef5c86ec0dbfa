package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestOwnJobsRunHere: two instances over one database, neither polling
// for jobs (River's poll is an hour). A call started and answered on one
// instance is run by that instance's own workers, told at once as its
// transactions return rather than through Postgres, so the other is not
// woken to look for it; it hears what becomes of the call, including,
// when the server takes its time, that the call is being sent on. With the first
// instance's workers stopped, what
// it stores is announced through Postgres instead, and the other instance
// runs it at once.
func TestOwnJobsRunHere(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	// While held is set, the server answers only once it is closed.
	var held atomic.Pointer[chan struct{}]
	mcp := demo.Handler(demo.Options{Secret: []byte("own jobs test secret")})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold := held.Load(); hold != nil {
			select {
			case <-*hold:
			case <-r.Context().Done():
				return
			}
		}
		mcp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	type instance struct {
		st       *store.Store
		notifier *store.Notifier
		eng      *engine.Engine
	}
	start := func(id string) instance {
		n := store.NewNotifier(pool, log, engine.RiverTopics()...)
		st, err := store.New(pool, store.Options{Notifier: n})
		if err != nil {
			t.Fatal(err)
		}
		nctx, stop := context.WithCancel(ctx)
		t.Cleanup(stop)
		go n.Run(nctx)
		eng := startEngine(t, pool, st, mcpclient.New(mcpclient.Options{}), engine.Config{InstanceID: id,
			FetchPollInterval: time.Hour, Capabilities: mcpclient.Capabilities{FormElicitation: true}, Notifier: n}, log)
		eventually(t, 10*time.Second, func() error {
			if !n.Listening() {
				return errors.New("the notifier does not listen")
			}
			return nil
		})
		return instance{st: st, notifier: n, eng: eng}
	}
	a, b := start("instance-a"), start("instance-b")
	server, err := a.st.UpsertServer(ctx, "demo", srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	// wait waits for the call to reach status at round seq.
	wait := func(id, status string, seq int) {
		t.Helper()
		eventually(t, 20*time.Second, func() error {
			c, err := a.st.Call(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if c.Status != status || c.CurrentSeq != seq {
				return fmt.Errorf("the call is %s at round %d; want %s at round %d", c.Status, c.CurrentSeq, status, seq)
			}
			return nil
		})
	}
	// ranOn names the instance that ran each of the call's requests.
	ranOn := func(id string) []string {
		t.Helper()
		rows, _ := pool.Query(ctx, `select attempted_by[cardinality(attempted_by)] from river_job
			where kind = 'mcp_request' and args->>'call_id' = $1 order by id`, id)
		by, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return by
	}
	book := func(on instance) string {
		t.Helper()
		call, err := on.st.CreateCall(ctx, store.NewCall{ID: store.NewCallID(), ServerID: server.ID, Owner: "ada",
			Method: mcpclient.MethodCallTool, Target: "book_flight", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		wait(call.ID, store.CallInputRequired, 1)
		_, _, err = on.st.AnswerChecked(ctx, store.Answer{CallID: call.ID, Seq: 1, Person: "ada",
			Decide: func(store.Answering) (store.Decision, error) {
				return store.Decision{By: "ada", Responses: json.RawMessage(
					`{"trip":{"action":"accept","content":{"destination":"Lisbon","date":"2031-05-04"}},"party":{"action":"accept","content":{"passengers":2}}}`)}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		wait(call.ID, store.CallInputRequired, 2)
		return call.ID
	}
	// Each engine looks for jobs once as it starts, and takes whatever is
	// due then, whichever instance stored it. Once each has run a call of
	// its own, that first look is behind them both.
	for _, on := range []struct {
		name string
		inst instance
	}{{"instance-a", a}, {"instance-b", b}} {
		eventually(t, 20*time.Second, func() error {
			probe, err := on.inst.st.CreateCall(ctx, store.NewCall{ID: store.NewCallID(), ServerID: server.ID, Owner: "ada",
				Method: mcpclient.MethodCallTool, Target: "book_flight", Arguments: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			wait(probe.ID, store.CallInputRequired, 1)
			if by := ranOn(probe.ID); len(by) != 1 || by[0] != on.name {
				return fmt.Errorf("a call stored on %s ran on %q", on.name, by)
			}
			return nil
		})
	}

	for _, on := range []struct {
		name string
		inst instance
	}{{"instance-a", a}, {"instance-b", b}} {
		id := book(on.inst)
		if by := ranOn(id); len(by) != 2 || by[0] != on.name || by[1] != on.name {
			t.Errorf("a call started and answered on %s ran on %q; want both requests there", on.name, by)
		}
	}

	// The other instance hears each change of a call instance a runs:
	// that it is being sent on is told after a moment (the server's reply
	// usually comes first and replaces it), not kept back for good. The
	// server answers once b has heard the first.
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	held.Store(&hold)
	call, err := a.st.CreateCall(ctx, store.NewCall{ID: store.NewCallID(), ServerID: server.ID, Owner: "ada",
		Method: mcpclient.MethodCallTool, Target: "book_flight", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	notes, latest, stopWatching := b.notifier.Watch(call.ID)
	defer stopWatching()
	var heard []string
	for timeout := time.After(20 * time.Second); len(heard) == 0 || heard[len(heard)-1] != store.CallInputRequired+" 1"; {
		select {
		case <-notes:
			if n := latest(); n != nil {
				heard = append(heard, fmt.Sprintf("%s %d", n.Status, n.Seq))
				release()
			}
		case <-timeout:
			t.Fatalf("instance b heard %q of a call instance a runs; want it working, then waiting at round 1", heard)
		}
	}
	if len(heard) != 2 || (heard[0] != store.CallQueued+" 0" && heard[0] != store.CallRunning+" 0") {
		t.Errorf("instance b heard %q of a call instance a runs; want it working, then waiting at round 1", heard)
	}
	held.Store(nil)

	// Instance a's workers stop; its store goes on taking calls, and the
	// other instance hears of their jobs through Postgres.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.eng.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	id := book(a)
	if by := ranOn(id); len(by) != 2 || by[0] != "instance-b" || by[1] != "instance-b" {
		t.Errorf("with instance a's workers stopped, its call ran on %q; want instance-b", by)
	}
}
