package journeys

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// lateEnv shortens every timeout a late answer must outlive: the MCP
// request timeout (which is also River's job timeout), the time after which
// River takes a silent job for orphaned (request timeout + 2s) and the
// instances' heartbeat.
func lateEnv(servers string) map[string]string {
	return map[string]string{"MCP_SERVERS": servers, "MCP_REQUEST_TIMEOUT": "1s", "HEARTBEAT_INTERVAL": "200ms"}
}

// humanPause is how long the person thinks: longer than the request
// timeout, River's job timeout, the rescue threshold and many heartbeats.
const humanPause = 4500 * time.Millisecond

// TestHandshakeLateAnswer: a handshake-era server asks twice, and each
// question is answered long after every timeout but its own deadline, on
// the instance that does not hold the session. The result still lands, the
// server was called once, and River never took the job for orphaned.
func TestHandshakeLateAnswer(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	old := newOldServer(t)
	env := lateEnv("demo[2025-11-25]=" + old.URL)
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	call := c.startCall(a.URL, "ask_twice", `{}`)
	c.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))
	time.Sleep(humanPause)
	assertJobFresh(t, db, call.ID, 3*time.Second)
	if status, body := c.answer(b.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Ada"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer round 1 on B: %d %s", status, body)
	}
	c.waitFor(b.URL, call.ID, 10*time.Second, roundIs(2))
	time.Sleep(humanPause)
	if status, body := c.answer(b.URL, call.ID, 2, `{"elicitation":{"action":"accept","content":{"colour":"teal"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer round 2 on B: %d %s", status, body)
	}
	done := c.waitFor(b.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Ada likes teal" {
		t.Fatalf("call = %+v", done)
	}
	// Nothing comes undone once River has settled the job.
	eventually(t, 10*time.Second, func() error {
		var open int
		queryRow(t, db, `select count(*) from river_job where kind = 'mcp_request' and args->>'call_id' = $1
			and state not in ('completed', 'cancelled', 'discarded')`, []any{call.ID}, &open)
		if open > 0 {
			return fmt.Errorf("%d of the call's jobs are not settled", open)
		}
		return nil
	})
	if again := c.waitFor(a.URL, call.ID, time.Second, isDone); again.Status != "complete" {
		t.Fatalf("after a while the call is %+v", again)
	}
	if calls, actions := old.seen(); calls != 1 || strings.Join(actions, ",") != "accept,accept" {
		t.Errorf("the server saw %d calls and answers %v; want 1 call and two accepts", calls, actions)
	}
	if n := jobAttempts(t, db, call.ID); n != 1 {
		t.Errorf("the call's first job ran %d times, want once", n)
	}
}

// TestStatelessLateAnswer: a 2026-07-28 round answered after every timeout,
// on the other instance, still goes through.
func TestStatelessLateAnswer(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := lateEnv("demo=" + demoServer(t, nil))
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	call := c.startCall(a.URL, "book_flight", `{}`)
	c.waitFor(a.URL, call.ID, 10*time.Second, roundIs(1))
	time.Sleep(humanPause)
	if status, body := c.answer(b.URL, call.ID, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("answer round 1 on B: %d %s", status, body)
	}
	c.waitFor(a.URL, call.ID, 10*time.Second, roundIs(2))
	time.Sleep(humanPause)
	if status, body := c.answer(b.URL, call.ID, 2, seatAnswers); status != http.StatusAccepted {
		t.Fatalf("answer round 2 on B: %d %s", status, body)
	}
	done := c.waitFor(a.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" || !strings.Contains(resultText(t, done.Result), "Booked 2 passengers to Lisbon") {
		t.Fatalf("call = %+v", done)
	}
}

// assertJobFresh checks that the job holding the call's session told River
// it is alive within the last within, so River's rescuer, which takes a job
// silent for longer than the request timeout plus 2s, leaves it alone.
func assertJobFresh(t *testing.T, db, callID string, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var state string
	var age time.Duration
	if err := conn.QueryRow(ctx, `select state, now() - attempted_at from river_job
		where args->>'call_id' = $1 order by id limit 1`, callID).Scan(&state, &age); err != nil {
		t.Fatal(err)
	}
	if state != "running" || age > within {
		t.Errorf("the holding job is %s, last alive %s ago; want running within %s", state, age, within)
	}
}

// jobAttempts is how many times the call's first job was run.
func jobAttempts(t *testing.T, db, callID string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `select attempt from river_job where args->>'call_id' = $1 order by id limit 1`, callID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
