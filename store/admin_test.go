package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

func newAdminStore(t *testing.T) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	return st, pool
}

// adminPendingRound starts a call on srv and gives it a pending round 1 that
// expires at expires.
func adminPendingRound(t *testing.T, st *store.Store, srv *store.Server, expires time.Time) string {
	t.Helper()
	ctx := context.Background()
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "approve"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.StartAttempt(ctx, call.ID, 0); err != nil {
		t.Fatal(err)
	}
	err = st.AddRound(ctx, call.ID, 0, store.NewRound{
		InputRequests: json.RawMessage(`{"a":{"method":"elicitation/create","params":{"message":"?"}},"b":{"method":"elicitation/create","params":{"message":"?"}}}`),
		RequestState:  []byte(`"opaque"`),
		ExpiresAt:     expires,
	})
	if err != nil {
		t.Fatal(err)
	}
	return call.ID
}

// TestExpireDueRoundsOnce runs the expiry from many goroutines at once, as
// several instances might: every due round is expired exactly once, with
// one audit row, and a round not yet due is left alone.
func TestExpireDueRoundsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	const due = 40
	for range due {
		adminPendingRound(t, st, srv, time.Now().Add(-time.Second))
	}
	notDue := adminPendingRound(t, st, srv, time.Now().Add(time.Hour))

	const runners = 8
	counts := make([]int, runners)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range runners {
		wg.Go(func() {
			<-start
			expired, err := st.ExpireDueRounds(ctx, "runner")
			if err != nil {
				t.Error(err)
			}
			counts[i] = len(expired)
		})
	}
	close(start)
	wg.Wait()
	total := 0
	for _, n := range counts {
		total += n
	}
	// A runner skips rounds another holds, so one more pass may find the
	// rest; none may be expired twice.
	more, err := st.ExpireDueRounds(ctx, "runner")
	if err != nil {
		t.Fatal(err)
	}
	if total+len(more) != due {
		t.Errorf("expired %d + %d rounds across runs (%v), want %d", total, len(more), counts, due)
	}
	var rows, distinct, calls int
	err = pool.QueryRow(ctx, `select count(*), count(distinct target) from audit_log where action = 'round.expired'`).Scan(&rows, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if rows != due || distinct != due {
		t.Errorf("audit rows = %d for %d calls, want %d each", rows, distinct, due)
	}
	err = pool.QueryRow(ctx, `select count(*) from calls c join rounds r on r.call_id = c.id
		where c.status = 'expired' and r.status = 'expired' and r.outcome = 'expired' and r.ended_at is not null`).Scan(&calls)
	if err != nil {
		t.Fatal(err)
	}
	if calls != due {
		t.Errorf("%d calls and rounds expired, want %d", calls, due)
	}
	call, err := st.Call(ctx, notDue)
	if err != nil {
		t.Fatal(err)
	}
	if call.Status != store.CallInputRequired {
		t.Errorf("the round not yet due: call status %s", call.Status)
	}
}

// TestRoundOutcome: how a round ended is read from the actions alone.
func TestRoundOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, responses, want string
	}{
		{"Accepted", `{"a":{"action":"accept","content":{"x":1}},"b":{"action":"accept","content":{}}}`, "answered"},
		{"PartlyDeclined", `{"a":{"action":"accept","content":{"x":1}},"b":{"action":"decline"}}`, "answered"},
		{"Declined", `{"a":{"action":"decline"},"b":{"action":"decline"}}`, "declined"},
		{"Cancelled", `{"a":{"action":"accept","content":{}},"b":{"action":"cancel"}}`, "cancelled"},
		{"DeclinedAndSampled", `{"a":{"action":"decline"},"s":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`, "answered"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := adminPendingRound(t, st, srv, time.Now().Add(time.Hour))
			if err := answerRound(ctx, st, id, 1, tt.responses, "ada"); err != nil {
				t.Fatal(err)
			}
			var outcome string
			if err := pool.QueryRow(ctx, `select outcome from rounds where call_id = $1`, id).Scan(&outcome); err != nil {
				t.Fatal(err)
			}
			if outcome != tt.want {
				t.Errorf("outcome = %s, want %s", outcome, tt.want)
			}
		})
	}
}

// TestAuditLogAppendOnly: rows go in, and never change or go away.
func TestAuditLogAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	if err := st.Audit(ctx, store.AuditEntry{Instance: "i", Actor: "ada", Action: "sign_in", Target: "ada"}); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`update audit_log set actor = 'mallory'`,
		`delete from audit_log`,
		`truncate audit_log`,
	} {
		_, err := pool.Exec(ctx, sql)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want it refused as append-only", sql, err)
		}
	}
	rows, err := st.AuditLog(ctx, store.AuditFilter{Action: "sign"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Actor != "ada" {
		t.Errorf("audit log = %+v, want the one row, unchanged", rows)
	}
}

// TestEndRoundOnce: an operator's expire or cancel is a guarded update.
func TestEndRoundOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newAdminStore(t)
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	id := adminPendingRound(t, st, srv, time.Now().Add(time.Hour))
	entry := store.AuditEntry{Instance: "i", Actor: "root", Action: "admin.round.cancelled", Target: id}
	if err := st.EndRound(ctx, id, 1, store.RoundCancelled, "", entry); err != nil {
		t.Fatal(err)
	}
	if err := st.EndRound(ctx, id, 1, store.RoundExpired, "", entry); err == nil {
		t.Error("a round ended twice")
	}
	call, err := st.Call(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if call.Status != store.CallCancelled || call.Error == nil {
		t.Errorf("call = %s %v, want cancelled with a message", call.Status, call.Error)
	}
	if err := answerRound(ctx, st, id, 1, `{}`, "ada"); err == nil {
		t.Error("a cancelled round took answers")
	}
}

// TestInstancesSilent: an instance that stops beating is marked silent
// after three intervals; one that stopped cleanly is not.
func TestInstancesSilent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newAdminStore(t)
	for _, id := range []string{"quiet", "gone"} {
		hb := store.Heartbeat{ID: id, Version: "v1", Hostname: "h", PID: 1, StartedAt: time.Now(), Interval: 50 * time.Millisecond}
		if err := st.Beat(ctx, hb); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.StopInstance(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	// Three intervals on, by Postgres's clock, the quiet one is silent.
	silent := map[string]bool{}
	var list []store.Instance
	eventually(t, 10*time.Second, func() error {
		var err error
		if list, err = st.Instances(ctx); err != nil {
			t.Fatal(err)
		}
		for _, i := range list {
			silent[i.ID] = i.Silent()
		}
		if !silent["quiet"] {
			return errors.New("the instance that stopped beating is not silent")
		}
		return nil
	})
	if len(list) != 2 || !silent["quiet"] || silent["gone"] {
		t.Errorf("silent = %v, want only the one that stopped beating", silent)
	}
}
