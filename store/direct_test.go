package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// TestDirectAttemptIsRiversAttempt checks what a transaction that enqueues a
// request sent at once (a new call, an answer) commits and hands on: the
// attempt it builds from what it read and wrote is the one River's job
// would read, and its job is the one River would run, scheduled After from
// the commit.
func TestDirectAttemptIsRiversAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateServer(ctx, "demo", "http://127.0.0.1:1/mcp", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	const after = 7 * time.Second

	call, d, err := st.CreateCallDirect(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "book",
		Arguments: json.RawMessage(`{"to":"Lisbon"}`)}, after)
	if err != nil {
		t.Fatal(err)
	}
	sameAsRivers(t, st, pool, d, call.ID, 0, after)

	state := []byte("opaque\x00state \xff bytes")
	if err := st.AddRound(ctx, call.ID, 0, store.NewRound{
		InputRequests: json.RawMessage(`{"seat":{"method":"elicitation/create","params":{"message":"Which seat?","requestedSchema":{"type":"object","properties":{"seat":{"type":"string"}}}}}}`),
		RequestState:  state,
		ExpiresAt:     time.Now().Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	answers := json.RawMessage(`{"seat":{"action":"accept","content":{"seat":"12A"}}}`)
	_, d, err = st.AnswerChecked(ctx, store.Answer{CallID: call.ID, Seq: 1, Person: "ada", SendAfter: after,
		Decide: func(store.Answering) (store.Decision, error) {
			return store.Decision{Responses: answers, By: "ada"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	a := sameAsRivers(t, st, pool, d, call.ID, 1, after)
	if a.RoundTTL != 90*time.Second || string(a.Round.RequestState) != string(state) || a.Round.Status != store.RoundAnswered {
		t.Errorf("the answer's attempt: ttl %s, state %q, round %s", a.RoundTTL, a.Round.RequestState, a.Round.Status)
	}
}

// sameAsRivers checks d's job and attempt against what River would run and
// read for request seq, and returns the attempt.
func sameAsRivers(t *testing.T, st *store.Store, pool *pgxpool.Pool, d *store.Direct, callID string, seq int, after time.Duration) *store.Attempt {
	t.Helper()
	ctx := context.Background()
	if d == nil || d.Job == 0 || d.Attempt == nil {
		t.Fatalf("request %d: %+v; want a job and an attempt", seq, d)
	}
	var kind, state, q string
	var attempts, priority int
	var args queue.RequestArgs
	var delay time.Duration
	if err := pool.QueryRow(ctx, `select kind, state::text, queue, max_attempts, priority, args, scheduled_at - created_at
		from river_job where id = $1`, d.Job).Scan(&kind, &state, &q, &attempts, &priority, &args, &delay); err != nil {
		t.Fatal(err)
	}
	if kind != (queue.RequestArgs{}).Kind() || state != "scheduled" || q != "default" || priority != 1 ||
		attempts != (queue.RequestArgs{}).InsertOpts().MaxAttempts || args != (queue.RequestArgs{CallID: callID, Seq: seq}) || delay != after {
		t.Errorf("request %d's job: %s %s %s, %d attempts, priority %d, args %+v, due %s after its insert",
			seq, kind, state, q, attempts, priority, args, delay)
	}
	rivers, err := st.StartAttempt(ctx, callID, seq)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Attempt, rivers) {
		t.Errorf("request %d: the attempt sent at once\n%+v\nis not River's\n%+v", seq, d.Attempt, rivers)
	}
	return d.Attempt
}
