package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
)

// TestStatusFromDeadline reads a round the moment its deadline passes,
// before any expiry job has run: the call, its rounds and the inbox all
// say expired, and an answer is refused as expired.
func TestStatusFromDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	// The deadline leaves room for setting the round up on a busy machine
	// (parallel tests under the race detector): the first read must come
	// before it.
	deadline := time.Now().Add(3 * time.Second)
	id := adminPendingRound(t, st, srv, deadline)
	if c, err := st.Call(ctx, id); err != nil || c.Status != store.CallInputRequired {
		t.Fatalf("before the deadline: %+v %v", c, err)
	}
	// The person answers after the deadline, as Postgres's clock has it.
	eventually(t, 10*time.Second, func() error {
		var past bool
		if err := pool.QueryRow(ctx, `select now() > expires_at from rounds where call_id = $1 and seq = 1`, id).Scan(&past); err != nil {
			t.Fatal(err)
		}
		if !past {
			return errors.New("the round's deadline has not passed")
		}
		return nil
	})
	c, rounds, err := st.CallAndRounds(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != store.CallExpired || c.Error == nil || !strings.Contains(*c.Error, "expired") {
		t.Errorf("call after the deadline: status %q, error %v; want expired with a message", c.Status, c.Error)
	}
	if len(rounds) != 1 || rounds[0].Status != store.RoundExpired {
		t.Errorf("round after the deadline: %+v", rounds)
	}
	if items, err := inbox(ctx, st, "ada"); err != nil || len(items) != 0 {
		t.Errorf("inbox after the deadline: %v %v", items, err)
	}
	err = answerRound(ctx, st, id, 1, `{"a":{"action":"decline"},"b":{"action":"decline"}}`, "ada")
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("late answer: %v, want a conflict saying it expired", err)
	}
}

// TestRetention deletes finished calls past the retention with everything
// they hold, and nothing else; and prunes the audit log only through its
// retention function, never by a plain DELETE.
func TestRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	old := adminPendingRound(t, st, srv, time.Now().Add(time.Hour))
	recent := adminPendingRound(t, st, srv, time.Now().Add(time.Hour))
	waiting := adminPendingRound(t, st, srv, time.Now().Add(time.Hour))
	for _, id := range []string{old, recent} {
		if err := answerRound(ctx, st, id, 1, `{"a":{"action":"decline"},"b":{"action":"decline"}}`, "ada"); err != nil {
			t.Fatal(err)
		}
		if err := st.CompleteCall(ctx, id, 1, json.RawMessage(`{"content":[]}`)); err != nil {
			t.Fatal(err)
		}
	}
	// The old call finished 100 days ago; the waiting one started as long
	// ago but has not finished.
	if _, err := pool.Exec(ctx, `update calls set finished_at = now() - interval '100 days', created_at = now() - interval '100 days'
		where id = $1`, old); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `update calls set created_at = now() - interval '100 days' where id = $1`, waiting); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `insert into attempts (call_id, seq, instance, started_at, duration_ms, outcome)
		values ($1, 0, 'test', now(), 1, 'result')`, old); err != nil {
		t.Fatal(err)
	}
	n, err := st.DeleteFinishedCalls(ctx, time.Now().Add(-90*24*time.Hour), 1000)
	if err != nil || n != 1 {
		t.Fatalf("deleted %d calls (%v), want 1", n, err)
	}
	if _, err := st.Call(ctx, old); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old call: %v, want not found", err)
	}
	var left int
	if err := pool.QueryRow(ctx, `select (select count(*) from rounds where call_id = $1) + (select count(*) from attempts where call_id = $1)`,
		old).Scan(&left); err != nil || left != 0 {
		t.Errorf("rounds and attempts of the old call left: %d (%v)", left, err)
	}
	for _, id := range []string{recent, waiting} {
		if _, err := st.Call(ctx, id); err != nil {
			t.Errorf("call %s: %v, want it kept", id, err)
		}
	}

	// The audit log: a plain DELETE is refused, even of old rows.
	if _, err := pool.Exec(ctx, `insert into audit_log (at, instance, actor, action) values
		(now() - interval '500 days', 'test', 'ada', 'old.action'), (now(), 'test', 'ada', 'new.action')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `delete from audit_log where action = 'old.action'`); err == nil {
		t.Error("a plain DELETE of the audit log went through")
	}
	if _, err := st.PruneAuditLog(ctx, time.Hour, 100); err == nil {
		t.Error("pruning the audit log to an hour went through; the minimum is a day")
	}
	n, err = st.PruneAuditLog(ctx, 400*24*time.Hour, 100)
	if err != nil || n != 1 {
		t.Fatalf("pruned %d audit entries (%v), want 1", n, err)
	}
	var actions []string
	rows, _ := pool.Query(ctx, `select action from audit_log where action in ('old.action', 'new.action')`)
	for rows.Next() {
		var a string
		_ = rows.Scan(&a)
		actions = append(actions, a)
	}
	if rows.Err() != nil || len(actions) != 1 || actions[0] != "new.action" {
		t.Errorf("audit entries left: %v (%v), want only the new one", actions, rows.Err())
	}
	if _, err := pool.Exec(ctx, `update audit_log set actor = 'eve' where action = 'new.action'`); err == nil {
		t.Error("an UPDATE of the audit log went through")
	}
}

// TestDeleteCallsOf deletes every call of one person, audited in the same
// transaction, and no one else's.
func TestDeleteCallsOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	mine := adminPendingRound(t, st, srv, time.Now().Add(time.Hour))
	adminPendingRound(t, st, srv, time.Now().Add(time.Hour))
	theirs, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "bob", Method: "tools/call", Target: "approve"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.DeleteCallsOf(ctx, "ada", store.AuditEntry{Instance: "test", Actor: "root", Action: "calls.deleted"})
	if err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want 2", n, err)
	}
	if _, err := st.Call(ctx, mine); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ada's call: %v", err)
	}
	if _, err := st.Call(ctx, theirs.ID); err != nil {
		t.Errorf("bob's call: %v", err)
	}
	var target string
	var calls int
	if err := pool.QueryRow(ctx, `select target, (detail->>'calls')::int from audit_log where action = 'calls.deleted'`).
		Scan(&target, &calls); err != nil || target != "ada" || calls != 2 {
		t.Errorf("audit: %q %d %v", target, calls, err)
	}
}
