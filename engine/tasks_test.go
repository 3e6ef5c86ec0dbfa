package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/mcptest"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// taskPoll is how often the fake's tasks ask to be polled; taskWait how
// often at most a task is polled while its question waits for a person.
const (
	taskPoll = 200 * time.Millisecond
	taskWait = 300 * time.Millisecond
)

const goAhead = `{"approve-1":{"action":"accept","content":{"confirm":true}}}`

func startTaskCall(t *testing.T, st *store.Store, serverID int64, tool string) string {
	t.Helper()
	call, err := st.CreateCall(context.Background(), store.NewCall{ServerID: serverID, Owner: "ada",
		Method: mcpclient.MethodCallTool, Target: tool, Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return call.ID
}

// TestTaskAnsweredAfterRestarts: a tool the server runs as a task works,
// then waits on a person's go-ahead. The task is polled at the pace the
// server asks; its question, sent again on every poll while it waits, is
// one round. Both instances stop; the person answers after every timeout
// on an instance that was not running when the task asked. tasks/update
// carries the answer, polling goes on at the server's new, slower pace,
// and the call completes with the task's result.
func TestTaskAnsweredAfterRestarts(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	tasker := mcptest.NewTasker(t, taskPoll)
	cfg := engine.Config{TaskWaitPoll: taskWait}
	a := startInstance(t, pool, "a", cfg)
	b := startInstance(t, pool, "b", cfg)
	server, err := a.st.UpsertServer(ctx, "tasker", tasker.URL)
	if err != nil {
		t.Fatal(err)
	}
	id := startTaskCall(t, a.st, server.ID, "deploy")
	call := waitFor(t, a.st, id, store.CallInputRequired, 1)
	if !call.IsTask() || call.TaskExpiresAt == nil || time.Until(*call.TaskExpiresAt) < 50*time.Minute {
		t.Fatalf("task %v, expires %v", call.IsTask(), call.TaskExpiresAt)
	}
	rounds, err := a.st.Rounds(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 1 || !rounds[0].Task || rounds[0].RequestState != nil ||
		!strings.Contains(string(rounds[0].InputRequests), `"approve-1"`) {
		t.Fatalf("rounds: %+v", rounds)
	}
	if !rounds[0].ExpiresAt.Equal(*call.TaskExpiresAt) {
		t.Fatalf("the round's deadline %v is not the task's %v", rounds[0].ExpiresAt, *call.TaskExpiresAt)
	}
	// The server sends the question again on later polls: still one round.
	eventually(t, 20*time.Second, func() error {
		if polls := tasker.Polls("deploy"); asked(polls) < 3 {
			return fmt.Errorf("polls while waiting: %+v", polls)
		}
		return nil
	})
	a.stop()
	b.stop()
	// The person takes their time: the task's next poll, due while no
	// instance runs, is overdue by more than every timeout.
	eventually(t, 30*time.Second, func() error {
		var overdue float64
		if err := pool.QueryRow(ctx, `select extract(epoch from now() - scheduled_at) from river_job
			where kind = 'task_poll' and args->>'call_id' = $1 and state in ('scheduled', 'available', 'retryable')`,
			id).Scan(&overdue); err != nil {
			return fmt.Errorf("the task's next poll: %w", err)
		}
		if overdue <= humanPause.Seconds() {
			return fmt.Errorf("the task's next poll is overdue by %.1fs", overdue)
		}
		return nil
	})
	a2 := startInstance(t, pool, "a2", cfg)
	c := startInstance(t, pool, "c", cfg)
	if rounds, _ := c.st.Rounds(ctx, id); len(rounds) != 1 {
		t.Fatalf("%d rounds for one question", len(rounds))
	}
	answer(t, c.st, id, 1, goAhead)
	call = waitFor(t, a2.st, id, store.CallComplete, 1)
	if !strings.Contains(string(call.Result), "Deployed build 42.") {
		t.Fatalf("result: %s", call.Result)
	}
	if v := tasker.Violations(); len(v) > 0 {
		t.Fatalf("against the extension: %q", v)
	}
	if n := tasker.Count("tasks/update"); n != 1 {
		t.Fatalf("%d tasks/update", n)
	}
	// Every poll came no sooner than the server asked, and no sooner than
	// TaskWaitPoll while the question waited.
	polls := tasker.Polls("deploy")
	slower := false
	for i := 1; i < len(polls); i++ {
		gap, want := polls[i].At.Sub(polls[i-1].At), polls[i-1].Every
		if polls[i-1].Asked != "" && polls[i].Asked != "" {
			want = max(want, taskWait)
		}
		if gap < want-20*time.Millisecond {
			t.Fatalf("poll %d came %v after the one before, which asked for %v", i, gap, want)
		}
		slower = slower || polls[i-1].Every == 2*taskPoll
	}
	if !slower {
		t.Fatalf("the server's slower pace was never asked for: %+v", polls)
	}
	actions := auditActions(t, c.st, id)
	if !slices.Contains(actions, "call.task_started") {
		t.Fatalf("audit: %q", actions)
	}
}

// asked counts the polls answered with a question.
func asked(polls []mcptest.Poll) int {
	n := 0
	for _, p := range polls {
		if p.Asked != "" {
			n++
		}
	}
	return n
}

// TestTaskEnds: how a task's end reaches its call, and a call that first
// asks as an ordinary round and then becomes a task.
func TestTaskEnds(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	tasker := mcptest.NewTasker(t, taskPoll)
	in := startInstance(t, pool, "a", engine.Config{TaskWaitPoll: taskWait})
	server, err := in.st.UpsertServer(ctx, "tasker", tasker.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("round then task", func(t *testing.T) {
		id := startTaskCall(t, in.st, server.ID, "plan_deploy")
		waitFor(t, in.st, id, store.CallInputRequired, 1)
		answer(t, in.st, id, 1, `{"env":{"action":"accept","content":{"env":"production"}}}`)
		waitFor(t, in.st, id, store.CallInputRequired, 2)
		rounds, _ := in.st.Rounds(ctx, id)
		if len(rounds) != 2 || rounds[0].Task || !rounds[1].Task || rounds[0].RequestState == nil {
			t.Fatalf("rounds: %+v", rounds)
		}
		answer(t, in.st, id, 2, goAhead)
		call := waitFor(t, in.st, id, store.CallComplete, 2)
		if !strings.Contains(string(call.Result), "Deployed build 42 to production.") {
			t.Fatalf("result: %s", call.Result)
		}
	})
	t.Run("declined", func(t *testing.T) {
		id := startTaskCall(t, in.st, server.ID, "deploy")
		waitFor(t, in.st, id, store.CallInputRequired, 1)
		answer(t, in.st, id, 1, `{"approve-1":{"action":"decline"}}`)
		call := waitFor(t, in.st, id, store.CallComplete, 1)
		if !strings.Contains(string(call.Result), "Deployment cancelled.") {
			t.Fatalf("result: %s", call.Result)
		}
	})
	t.Run("failed", func(t *testing.T) {
		id := startTaskCall(t, in.st, server.ID, "flaky_build")
		call := waitFor(t, in.st, id, store.CallFailed, 0)
		if e := deref(call.Error); !strings.Contains(e, "The task failed on the server: API rate limit exceeded.") {
			t.Fatalf("error: %q", e)
		}
	})
	t.Run("forgotten while it waits", func(t *testing.T) {
		id := startTaskCall(t, in.st, server.ID, "deploy")
		waitFor(t, in.st, id, store.CallInputRequired, 1)
		tasker.Expire()
		call := waitFor(t, in.st, id, store.CallFailed, 1)
		if e := deref(call.Error); !strings.Contains(e, "The server no longer knows this task") {
			t.Fatalf("error: %q", e)
		}
		rounds, _ := in.st.Rounds(ctx, id)
		if rounds[0].Status != store.RoundCancelled {
			t.Fatalf("the round is %s", rounds[0].Status)
		}
	})
	for _, finish := range []bool{false, true} {
		name := "stopped"
		if finish {
			name = "stopped but finished"
			tasker.FinishOnCancel()
		}
		t.Run(name, func(t *testing.T) {
			id := startTaskCall(t, in.st, server.ID, "long_job")
			eventually(t, 20*time.Second, func() error {
				c, err := in.st.Call(ctx, id)
				if err != nil {
					return err
				}
				if p := c.RunningProgress(); p == nil || !strings.HasPrefix(p.Message, "Step ") || !p.Task {
					return fmt.Errorf("no step shown: %s", c.Progress)
				}
				return nil
			})
			before := tasker.Count("tasks/cancel")
			if err := in.st.CancelCall(ctx, id, store.AuditEntry{Instance: "a", Actor: "ada", Action: "call.cancelled", Target: id}); err != nil {
				t.Fatal(err)
			}
			if !finish {
				eventually(t, 20*time.Second, func() error {
					if tasker.Count("tasks/cancel") == before {
						return errors.New("the server was never asked to stop the task")
					}
					return nil
				})
				// The task's polls end once one sees it stopped: the call's
				// state is its last.
				eventually(t, 20*time.Second, func() error {
					var left, all int
					if err := pool.QueryRow(ctx, `select count(*) filter (where state <> 'completed'), count(*) from river_job
						where kind = 'task_poll' and args->>'call_id' = $1`, id).Scan(&left, &all); err != nil {
						return err
					}
					if all == 0 || left > 0 {
						return fmt.Errorf("%d of the task's %d poll jobs not done", left, all)
					}
					return nil
				})
				call, _ := in.st.Call(ctx, id)
				if call.Status != store.CallCancelled || tasker.Status("long_job") != "cancelled" {
					t.Fatalf("call %s, task %s", call.Status, tasker.Status("long_job"))
				}
				return
			}
			call := waitFor(t, in.st, id, store.CallComplete, 0)
			if !strings.Contains(string(call.Result), "Finished before the stop.") || call.TaskStoppedAt == nil {
				t.Fatalf("result %s, stopped %v", call.Result, call.TaskStoppedAt)
			}
		})
	}
	if v := tasker.Violations(); len(v) > 0 {
		t.Fatalf("against the extension: %q", v)
	}
}

// TestTaskRoundTakesServerLifetime: a task's question stays answerable as
// long as its server's own round lifetime says, not ROUND_TTL.
func TestTaskRoundTakesServerLifetime(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	tasker := mcptest.NewTasker(t, taskPoll)
	in := startInstance(t, pool, "a", engine.Config{TaskWaitPoll: taskWait})
	server, err := in.st.UpsertServer(ctx, "tasker", tasker.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.st.UpdateServer(ctx, "tasker", tasker.URL, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	id := startTaskCall(t, in.st, server.ID, "deploy")
	waitFor(t, in.st, id, store.CallInputRequired, 1)
	rounds, err := in.st.Rounds(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(rounds[0].ExpiresAt); left > 90*time.Second || left < 60*time.Second {
		t.Fatalf("the task's round is answerable for %v; the server's rounds last 90s", left.Round(time.Second))
	}
}
