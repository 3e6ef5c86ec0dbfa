package journeys

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestRoundSentDirectly: the instance that stores a call, and an answer,
// sends the request itself, and the request's River job, scheduled as a
// safety net, is gone with the outcome, never run by River. (When the
// instance dies mid-request, River sends it: TestCrashDuringRetry.)
func TestRoundSentDirectly(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)

	call := c.startCall(inst.URL, "confirm_delete", `{"path":"/srv/old.log"}`)
	c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
	time.Sleep(humanPause)
	if status, body := c.answer(inst.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Deleted /srv/old.log" {
		t.Fatalf("call = %+v", done)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var jobs int
	if err := conn.QueryRow(ctx, `select count(*) from river_job where kind = 'mcp_request' and args->>'call_id' = $1`,
		call.ID).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 0 {
		t.Errorf("%d request jobs of the call are left; want none (each removed, unrun, with its outcome)", jobs)
	}
	// Both requests were made once, and recorded by the instance.
	var attempts, instances int
	if err := conn.QueryRow(ctx, `select count(*), count(distinct instance) from attempts where call_id = $1`,
		call.ID).Scan(&attempts, &instances); err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || instances != 1 {
		t.Errorf("%d attempts by %d instances; want 2 by 1", attempts, instances)
	}
}
