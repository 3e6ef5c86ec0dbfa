package engine_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/mcptest"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// Timeouts of the instances in these tests, and how long a person thinks
// before answering: the tests move the engine's clock by humanPause rather
// than wait, and the server's state runs out when they say (mcptest's
// Expire: what Rounds sends at once afterwards is taken, however busy the
// machine).
const (
	requestTimeout = time.Second
	heartbeat      = 300 * time.Millisecond
	humanPause     = 2 * time.Second
)

// instance is one Rounds process: its store, listener and engine.
type instance struct {
	st   *store.Store
	eng  *engine.Engine
	stop func()
}

func startInstance(t *testing.T, pool *pgxpool.Pool, id string, cfg engine.Config) *instance {
	t.Helper()
	return startInstanceWith(t, pool, id, cfg, requestTimeout)
}

// startInstanceWith starts an instance whose MCP requests may take timeout.
func startInstanceWith(t *testing.T, pool *pgxpool.Pool, id string, cfg engine.Config, timeout time.Duration) *instance {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	n := store.NewNotifier(pool, log, engine.RiverTopics()...)
	st, err := store.New(pool, store.Options{Notifier: n})
	if err != nil {
		t.Fatal(err)
	}
	nctx, stopNotifier := context.WithCancel(context.Background())
	go n.Run(nctx)
	cfg.InstanceID, cfg.Notifier = id, n
	cfg.RequestTimeout, cfg.HeartbeatInterval = timeout, heartbeat
	cfg.Capabilities = mcpclient.Capabilities{FormElicitation: true, URLElicitation: true}
	eng, err := engine.New(pool, st, mcpclient.New(mcpclient.Options{RequestTimeout: timeout}), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := &instance{st: st, eng: eng}
	stopped := false
	in.stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Stop(ctx)
		stopNotifier()
	}
	t.Cleanup(in.stop)
	return in
}

// waitFor waits for the call to reach status at round seq.
func waitFor(t *testing.T, st *store.Store, id, status string, seq int) *store.Call {
	t.Helper()
	var c *store.Call
	eventually(t, 30*time.Second, func() error {
		var err error
		if c, err = st.Call(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if c.Status != status || c.CurrentSeq != seq {
			return fmt.Errorf("the call is %s at round %d (error %v); want %s at round %d", c.Status, c.CurrentSeq, deref(c.Error), status, seq)
		}
		return nil
	})
	return c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// answer answers round seq as person, through the path both the pages and
// the API take.
func answer(t *testing.T, st *store.Store, id string, seq int, responses string) {
	t.Helper()
	_, _, err := st.AnswerChecked(context.Background(), store.Answer{CallID: id, Seq: seq, Person: "ada",
		Decide: func(store.Answering) (store.Decision, error) {
			return store.Decision{By: "ada", Responses: json.RawMessage(responses)}, nil
		}})
	if err != nil {
		t.Fatalf("answering round %d: %v", seq, err)
	}
}

const (
	toLisbon = `{"destination":{"action":"accept","content":{"destination":"Lisbon"}}}`
	onMay4   = `{"date":{"action":"accept","content":{"date":"2031-05-04"}}}`
)

func bookFlight(t *testing.T, st *store.Store, serverID int64) string {
	t.Helper()
	call, err := st.CreateCall(context.Background(), store.NewCall{ServerID: serverID, Owner: "ada",
		Method: mcpclient.MethodCallTool, Target: "book_flight", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, st, call.ID, store.CallInputRequired, 1)
	answer(t, st, call.ID, 1, toLisbon)
	waitFor(t, st, call.ID, store.CallInputRequired, 2)
	return call.ID
}

// auditActions lists the system's audit actions on a call, oldest first.
func auditActions(t *testing.T, st *store.Store, id string) []string {
	t.Helper()
	recs, err := st.AuditLog(context.Background(), store.AuditFilter{Target: id, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(recs) - 1; i >= 0; i-- {
		out = append(out, recs[i].Action)
	}
	return out
}

// retriesAfterRefusal are the tools/call requests the server got after it
// refused a state: each should carry no answers and no state, or answers
// with the state the server sent since.
func toolCalls(f *mcptest.Fake) []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, e := range f.Exchanges() {
		if e.RPC != "tools/call" {
			continue
		}
		var msg struct{ Params map[string]json.RawMessage }
		_ = json.Unmarshal(e.Body, &msg)
		out = append(out, msg.Params)
	}
	return out
}

// TestAnswerAfterServerForgot: a FastMCP 4 server seals each round's state
// for a limited time. The person answers the second round after it ran
// out, after every timeout of Rounds, on another instance, after both
// instances restarted. The server refuses the state; Rounds asks it
// afresh, gives the answers again to the same questions, and the call
// completes with what the person said. The same when the server itself
// restarted (its sealing key is new), which it cannot tell apart.
func TestAnswerAfterServerForgot(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	for _, how := range []string{"expired", "server restarted"} {
		t.Run(how, func(t *testing.T) {
			fake := mcptest.NewFake(t, mcptest.FastMCP4)
			var now clock
			a := startInstance(t, pool, "a-"+how, engine.Config{Now: now.Now})
			server, err := a.st.UpsertServer(ctx, "fastmcp-"+strings.ReplaceAll(how, " ", "-"), fake.URL)
			if err != nil {
				t.Fatal(err)
			}
			id := bookFlight(t, a.st, server.ID)
			a.stop()
			now.Skip(humanPause)
			// The state's TTL runs out, or the server restarts with a new key.
			if how == "server restarted" {
				fake.Restart()
			} else {
				fake.Expire()
			}
			b := startInstance(t, pool, "b-"+how, engine.Config{Now: now.Now})
			answer(t, b.st, id, 2, onMay4)
			call := waitFor(t, b.st, id, store.CallComplete, 4)
			if !strings.Contains(string(call.Result), "Booked a flight to Lisbon on 2031-05-04") {
				t.Fatalf("result: %s", call.Result)
			}
			if call.Restarts != 1 {
				t.Errorf("asked afresh %d times, want 1", call.Restarts)
			}
			rounds, err := b.st.Rounds(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(rounds) != 4 {
				t.Fatalf("%d rounds, want 4", len(rounds))
			}
			if rounds[1].StateExpiredAt == nil || rounds[0].StateExpiredAt != nil {
				t.Errorf("state refused at rounds 1, 2: %v %v", rounds[0].StateExpiredAt, rounds[1].StateExpiredAt)
			}
			for i, r := range rounds[2:] {
				want := rounds[i]
				if !r.AnsweredAgain() || string(r.Responses) != string(want.Responses) || r.Asking != 1 || r.Position != i+1 {
					t.Errorf("round %d: by %v, asking %d at %d, answers %s; want again %s", r.Seq, deref(r.AnsweredBy), r.Asking, r.Position, r.Responses, want.Responses)
				}
			}
			got := strings.Join(auditActions(t, b.st, id), " ")
			if want := "call.asked_afresh round.answered_again round.answered_again"; !strings.Contains(got, want) {
				t.Errorf("audit: %s; want it to hold %s", got, want)
			}
			// The server saw: the first call, the answer to round 1, the
			// refused answer to round 2, then a fresh call and both answers
			// again, each with only the state it had just sent.
			calls := toolCalls(fake)
			if len(calls) != 6 {
				t.Fatalf("%d tools/call requests, want 6", len(calls))
			}
			if calls[2]["requestState"] == nil || calls[3]["requestState"] != nil || calls[3]["inputResponses"] != nil {
				t.Errorf("the refused answer carried state %s; the fresh ask carried %s %s",
					calls[2]["requestState"], calls[3]["requestState"], calls[3]["inputResponses"])
			}
			if string(calls[5]["requestState"]) == string(calls[2]["requestState"]) {
				t.Error("the answer given again carried the refused state")
			}
			if v := fake.Violations(); len(v) > 0 {
				t.Errorf("the server saw what FastMCP's clients never send: %q", v)
			}
		})
	}
}

// TestAskedAfreshOnlyTheSame: what Rounds gives again, and when it stops.
func TestAskedAfreshOnlyTheSame(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	var now clock
	in := startInstance(t, pool, "one", engine.Config{Now: now.Now})
	servers := 0
	register := func(t *testing.T, fake *mcptest.Fake) int64 {
		t.Helper()
		servers++
		s, err := in.st.UpsertServer(ctx, fmt.Sprintf("fastmcp-%d", servers), fake.URL)
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}

	t.Run("a question that moved goes to the person", func(t *testing.T) {
		fake := mcptest.NewFake(t, mcptest.FastMCP4)
		fake.MoveFares()
		id := bookFlight(t, in.st, register(t, fake))
		now.Skip(humanPause)
		fake.Expire()
		answer(t, in.st, id, 2, onMay4)
		waitFor(t, in.st, id, store.CallInputRequired, 4)
		rounds, err := in.st.Rounds(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !rounds[2].AnsweredAgain() || rounds[3].Status != store.RoundPending {
			t.Fatalf("round 3 by %v, round 4 %s; want round 3 given again and round 4 asked", deref(rounds[2].AnsweredBy), rounds[3].Status)
		}
		if !strings.Contains(string(rounds[3].InputRequests), "Fares from €435.") {
			t.Errorf("round 4 asks %s", rounds[3].InputRequests)
		}
		answer(t, in.st, id, 4, onMay4)
		call := waitFor(t, in.st, id, store.CallComplete, 4)
		if !strings.Contains(string(call.Result), "Lisbon on 2031-05-04") {
			t.Errorf("result: %s", call.Result)
		}
	})

	t.Run("a server that refuses its own fresh state is not asked again", func(t *testing.T) {
		fake := mcptest.NewFake(t, mcptest.FastMCP4)
		fake.SetStateTTL(time.Nanosecond)
		id := bookFlight(t, in.st, register(t, fake))
		answer(t, in.st, id, 2, onMay4)
		call := waitFor(t, in.st, id, store.CallFailed, 4)
		if call.Restarts != 1 || !call.Retryable || !strings.Contains(deref(call.Error), "refused the state of its own question") {
			t.Errorf("restarts %d, retryable %v, error %q", call.Restarts, call.Retryable, deref(call.Error))
		}
		if n := len(toolCalls(fake)); n != 6 {
			t.Errorf("%d tools/call requests, want 6 (no loop)", n)
		}
	})

	t.Run("replay off: the call stops, and a retry asks the person", func(t *testing.T) {
		fake := mcptest.NewFake(t, mcptest.FastMCP4)
		serverID := register(t, fake)
		if err := in.st.SetServerReplay(ctx, fmt.Sprintf("fastmcp-%d", servers), false); err != nil {
			t.Fatal(err)
		}
		id := bookFlight(t, in.st, serverID)
		now.Skip(humanPause)
		fake.Expire()
		answer(t, in.st, id, 2, onMay4)
		call := waitFor(t, in.st, id, store.CallFailed, 2)
		msg := deref(call.Error)
		if !call.Retryable || !strings.Contains(msg, "no longer knew this call's questions") ||
			!strings.Contains(msg, "not to give answers again") || strings.Contains(msg, "HTTP 400") {
			t.Fatalf("retryable %v, error %q", call.Retryable, msg)
		}
		if err := in.st.RetryCall(ctx, id); err != nil {
			t.Fatal(err)
		}
		waitFor(t, in.st, id, store.CallInputRequired, 3)
		rounds, err := in.st.Rounds(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r := rounds[2]; r.Status != store.RoundPending || r.Asking != 1 || r.Position != 1 {
			t.Errorf("round 3 is %s in asking %d at %d; want it asked of the person first in asking 1", r.Status, r.Asking, r.Position)
		}
	})
}

// TestAskedAfreshAtMostSoOften: the restarts setting bounds how often
// Rounds asks afresh by itself.
func TestAskedAfreshAtMostSoOften(t *testing.T) {
	pool := storetest.NewPool(t)
	var now clock
	in := startInstance(t, pool, "never", engine.Config{MaxRestarts: -1, Now: now.Now})
	fake := mcptest.NewFake(t, mcptest.FastMCP4)
	s, err := in.st.UpsertServer(t.Context(), "fastmcp", fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	id := bookFlight(t, in.st, s.ID)
	now.Skip(humanPause)
	fake.Expire()
	answer(t, in.st, id, 2, onMay4)
	call := waitFor(t, in.st, id, store.CallFailed, 2)
	if call.Restarts != 0 || !strings.Contains(deref(call.Error), "not to ask a server afresh by itself") {
		t.Errorf("restarts %d, error %q", call.Restarts, deref(call.Error))
	}
	var refusals int
	if err := pool.QueryRow(t.Context(), `select count(*) from audit_log where action = 'call.state_refused' and target = $1`, id).
		Scan(&refusals); err != nil && err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	if refusals != 1 {
		t.Errorf("%d refusals in the audit log, want 1", refusals)
	}
	// The person starts it again: the server is asked afresh, and the
	// person answers, however the same its questions (replay is on).
	if err := in.st.RetryCall(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, in.st, id, store.CallInputRequired, 3)
	rounds, err := in.st.Rounds(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r := rounds[2]; r.Status != store.RoundPending || r.Asking != 1 {
		t.Errorf("after the person's retry, round 3 is %s in asking %d; want it waiting for them", r.Status, r.Asking)
	}
}

// TestPromptAndResourceAfterServerForgot: a prompt and a resource read ask
// through rounds too; the demo server refuses their state once it ran out,
// as mcp 2.0 does, and both complete with the person's answers given again.
func TestPromptAndResourceAfterServerForgot(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	// The clock, the demo's and Rounds', jumps past the state's lifetime
	// while the person thinks; what the demo seals after that lives an
	// hour again.
	var now clock
	srv := httptest.NewServer(demo.Handler(demo.Options{Secret: []byte("forgetful demo"), StateTTL: time.Hour, Now: now.Now}))
	t.Cleanup(srv.Close)
	in := startInstance(t, pool, "demo", engine.Config{Now: now.Now})
	server, err := in.st.UpsertServer(ctx, "demo", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, target, args, answer, want string
	}{
		{mcpclient.MethodGetPrompt, "trip_plan", `{"destination":"Lisbon"}`,
			`{"trip":{"action":"accept","content":{"days":3,"likes":"tiles"}}}`, "Plan a 3-day trip to Lisbon. I like tiles."},
		{mcpclient.MethodReadResource, "demo://notes/secret", "",
			`{"reason":{"action":"accept","content":{"reason":"to see it"}}}`, "(Read because: to see it)"},
	} {
		t.Run(c.method, func(t *testing.T) {
			call, err := in.st.CreateCall(ctx, store.NewCall{ServerID: server.ID, Owner: "ada", Method: c.method,
				Target: c.target, Arguments: json.RawMessage(cmp.Or(c.args, `{}`))})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, in.st, call.ID, store.CallInputRequired, 1)
			now.Skip(2 * time.Hour)
			answer(t, in.st, call.ID, 1, c.answer)
			done := waitFor(t, in.st, call.ID, store.CallComplete, 2)
			if !strings.Contains(string(done.Result), c.want) || done.Restarts != 1 {
				t.Errorf("asked afresh %d times; result %s, want it to hold %q", done.Restarts, done.Result, c.want)
			}
		})
	}
}

// TestRoundsAfterAskingAfreshAreNotTooMany: the cap on rounds counts within
// one asking. A call asked afresh goes past MaxRounds by its round numbers
// while each asking stays within it; every round it stores is recorded as
// the round it is, never as one too many.
func TestRoundsAfterAskingAfreshAreNotTooMany(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	in := startInstance(t, pool, "capped", engine.Config{MaxRounds: 2})
	fake := mcptest.NewFake(t, mcptest.FastMCP4)
	s, err := in.st.UpsertServer(ctx, "fastmcp", fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	id := bookFlight(t, in.st, s.ID)
	fake.Expire()
	answer(t, in.st, id, 2, onMay4)
	call := waitFor(t, in.st, id, store.CallComplete, 4)
	if call.Restarts != 1 {
		t.Fatalf("asked afresh %d times, want 1", call.Restarts)
	}
	attempts, err := in.st.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, a := range attempts {
		outcomes = append(outcomes, fmt.Sprintf("%d:%s", a.Seq, a.Outcome))
	}
	got := strings.Join(outcomes, " ")
	// The refused answer to round 2 is recorded as an error; the fresh
	// asking's two rounds as rounds.
	if want := "0:input_required 1:input_required 2:error 2:input_required 3:input_required 4:result"; got != want {
		t.Errorf("attempts %s, want %s", got, want)
	}
}
