package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcptest"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// until waits for cond, polling, for at most within.
func until(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	eventually(t, within, func() error {
		if !cond() {
			return errors.New(what)
		}
		return nil
	})
}

// TestTaskPollsLeaveOtherJobsOnTime: a server answers every call with a
// task that never ends, has no ttlMs and says something new on every
// poll, and takes two seconds to answer each tasks/get. Its polls keep
// every task worker busy, and never take more than TASK_WORKERS.
// Meanwhile the round expiry job runs as soon as it is due, every time,
// and a call to another server is sent at once: neither waits behind a
// task poll.
func TestTaskPollsLeaveOtherJobsOnTime(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	endless := mcptest.NewTasker(t, 100*time.Millisecond)
	endless.SlowGets(2 * time.Second)
	planner := mcptest.NewTasker(t, taskPoll)
	in := startInstanceWith(t, pool, "a", engine.Config{Workers: 4, TaskWorkers: 2, TaskWaitPoll: taskWait,
		ExpiryInterval: 300 * time.Millisecond}, 5*time.Second)
	busy, err := in.st.UpsertServer(ctx, "endless", endless.URL)
	if err != nil {
		t.Fatal(err)
	}
	other, err := in.st.UpsertServer(ctx, "planner", planner.URL)
	if err != nil {
		t.Fatal(err)
	}
	const tasks = 16
	for range tasks {
		startTaskCall(t, in.st, busy.ID, "endless")
	}
	until(t, 30*time.Second, "every task started and its polls under way", func() bool {
		return endless.Started("endless") == tasks && endless.Getting() == 2
	})
	busySince := time.Now()
	id := startTaskCall(t, in.st, other.ID, "plan_deploy")
	waitFor(t, in.st, id, store.CallInputRequired, 1)
	if took := time.Since(busySince); took > 1500*time.Millisecond {
		t.Errorf("the call's request took %v to come back, behind the task polls", took.Round(time.Millisecond))
	}
	// The expiry jobs due since the polls took every task worker: how long
	// each waited for a worker.
	var ran int
	var waited time.Duration
	until(t, 30*time.Second, "five expiry jobs run", func() bool {
		err := pool.QueryRow(ctx, `select count(*), coalesce(max(attempted_at - scheduled_at), '0')
			from river_job where kind = 'round_expiry' and scheduled_at > $1 and attempted_at is not null`, busySince).
			Scan(&ran, &waited)
		return err == nil && ran >= 5
	})
	if waited > time.Second {
		t.Errorf("an expiry job waited %v for a worker, behind the task polls", waited.Round(time.Millisecond))
	}
	if n := endless.MostGetting(); n != 2 {
		t.Errorf("%d tasks/get at once at most; TASK_WORKERS is 2", n)
	}
}

// TestTaskLimit: a server runs at most its maxTasks tasks at once, across
// instances. The calls beyond are not sent and say why; when a task ends
// (here: a person stops it) the first in line starts, and a limit raised
// lets more start.
func TestTaskLimit(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	tasker := mcptest.NewTasker(t, taskPoll)
	// The expiry job's sweep (every 30 s by default) runs only at start
	// here: the wake after a stop is the stop's own.
	cfg := engine.Config{TaskWaitPoll: taskWait}
	a := startInstance(t, pool, "a", cfg)
	b := startInstance(t, pool, "b", cfg)
	server, err := a.st.UpsertServer(ctx, "tasker", tasker.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.st.SetServerMaxTasks(ctx, "tasker", 2); err != nil {
		t.Fatal(err)
	}
	first := startTaskCall(t, a.st, server.ID, "long_job")
	until(t, 30*time.Second, "the first task", func() bool { c, _ := a.st.Call(ctx, first); return c.IsTask() })
	// The server is known to run tasks: five more at once, on both instances.
	var ids []string
	for i := range 5 {
		st := a.st
		if i%2 == 1 {
			st = b.st
		}
		ids = append(ids, startTaskCall(t, st, server.ID, "long_job"))
	}
	waiting := engine.WaitingForTasks("tasker", 2)
	says := func(id string) bool {
		c, err := a.st.Call(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		p := c.RunningProgress()
		return !c.IsTask() && p != nil && p.Message == waiting
	}
	countWaiting := func() int {
		n := 0
		for _, id := range ids {
			if says(id) {
				n++
			}
		}
		return n
	}
	until(t, 30*time.Second, "four calls waiting", func() bool { return countWaiting() == 4 })
	if n := tasker.Started("long_job"); n != 2 {
		t.Fatalf("the server started %d tasks; it may run 2", n)
	}
	if err := a.st.CancelCall(ctx, first, store.AuditEntry{Instance: "a", Actor: "ada", Action: "call.cancelled", Target: first}); err != nil {
		t.Fatal(err)
	}
	until(t, 10*time.Second, "the first in line started", func() bool { return tasker.Started("long_job") == 3 })
	until(t, 10*time.Second, "three calls waiting", func() bool { return countWaiting() == 3 })
	if held, queued, err := a.st.ServerTaskLoad(ctx, server.ID); err != nil || held != 2 || queued != 3 {
		t.Fatalf("%d places held, %d waiting (%v); want 2 and 3", held, queued, err)
	}
	// A limit raised wakes nobody by itself: the expiry job's sweep does.
	if err := a.st.SetServerMaxTasks(ctx, "tasker", 4); err != nil {
		t.Fatal(err)
	}
	if n, err := a.st.WakeTaskWaiters(ctx); err != nil || n != 2 {
		t.Fatalf("the sweep woke %d calls (%v); two places are free", n, err)
	}
	until(t, 10*time.Second, "two more started once the limit was raised", func() bool { return tasker.Started("long_job") == 5 })
	until(t, 10*time.Second, "one call waiting", func() bool { return countWaiting() == 1 })
}

// TestTaskLifetime: a task the server gave no lifetime (no ttlMs) is
// followed for TASK_MAX_LIFETIME; then its call fails with a sentence and
// the server is asked to stop it. A task with a lifetime of its own runs
// on.
func TestTaskLifetime(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	tasker := mcptest.NewTasker(t, taskPoll)
	in := startInstance(t, pool, "a", engine.Config{TaskWaitPoll: taskWait, TaskMaxLifetime: 2 * time.Second})
	server, err := in.st.UpsertServer(ctx, "tasker", tasker.URL)
	if err != nil {
		t.Fatal(err)
	}
	steady := startTaskCall(t, in.st, server.ID, "steady")
	endless := startTaskCall(t, in.st, server.ID, "endless")
	call := waitFor(t, in.st, endless, store.CallFailed, 0)
	want := "Rounds follows a task its server gives no lifetime of its own for 2 seconds at most. This one ran that long"
	if e := deref(call.Error); !strings.Contains(e, want) {
		t.Fatalf("error: %q", e)
	}
	// Not before its lifetime; after it, within a few polls (a loaded
	// machine under -race may take a few seconds more).
	if lived := call.FinishedAt.Sub(*call.TaskStartedAt); lived < 2*time.Second || lived > 10*time.Second {
		t.Errorf("the task was followed for %v", lived)
	}
	if tasker.Count("tasks/cancel") != 1 {
		t.Errorf("%d tasks/cancel", tasker.Count("tasks/cancel"))
	}
	if c, _ := in.st.Call(ctx, steady); c.Status != store.CallRunning {
		t.Errorf("the task with a lifetime of its own is %s", c.Status)
	}
}

// TestTaskStoppedPolledSlowly: a person stops a task whose server goes on
// with it all the same. It is still polled, for a result that may come,
// but only every TASK_WAIT_POLL, not at the server's pace.
func TestTaskStoppedPolledSlowly(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	tasker := mcptest.NewTasker(t, 100*time.Millisecond)
	const wait = time.Second
	// Jobs snoozed for less than a second wait for River's next look:
	// look often, so the server's pace shows.
	in := startInstance(t, pool, "a", engine.Config{TaskWaitPoll: wait, FetchPollInterval: 50 * time.Millisecond})
	server, err := in.st.UpsertServer(ctx, "tasker", tasker.URL)
	if err != nil {
		t.Fatal(err)
	}
	id := startTaskCall(t, in.st, server.ID, "endless")
	until(t, 20*time.Second, "a few polls", func() bool { return len(tasker.Polls("endless")) >= 3 })
	if err := in.st.CancelCall(ctx, id, store.AuditEntry{Instance: "a", Actor: "ada", Action: "call.cancelled", Target: id}); err != nil {
		t.Fatal(err)
	}
	until(t, 20*time.Second, "the stop sent", func() bool { return tasker.Count("tasks/cancel") == 1 })
	stopped := len(tasker.Polls("endless"))
	until(t, 20*time.Second, "polls after the stop", func() bool { return len(tasker.Polls("endless")) >= stopped+4 })
	polls := tasker.Polls("endless")
	// The poll brought forward by the stop may come at once; every later
	// one waits TASK_WAIT_POLL.
	for i := stopped + 1; i < len(polls); i++ {
		if gap := polls[i].At.Sub(polls[i-1].At); gap < wait-20*time.Millisecond {
			t.Fatalf("poll %d of the stopped task came %v after the one before", i, gap)
		}
	}
	if c, _ := in.st.Call(ctx, id); c.Status != store.CallCancelled {
		t.Fatalf("the call is %s", c.Status)
	}
}

// TestTaskSameStatusWritesNothing: polls that say what the last one said
// write nothing to the call: a task working on with the same words (and a
// createdAt to the nanosecond), and a task waiting for a person's answer.
func TestTaskSameStatusWritesNothing(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	tasker := mcptest.NewTasker(t, taskPoll)
	in := startInstance(t, pool, "a", engine.Config{TaskWaitPoll: taskWait})
	server, err := in.st.UpsertServer(ctx, "tasker", tasker.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool   string
		settle int // the polls after which the call says what the task says
	}{{"steady", 3}, {"deploy", 6}} {
		t.Run(c.tool, func(t *testing.T) {
			id := startTaskCall(t, in.st, server.ID, c.tool)
			until(t, 20*time.Second, "the task settled", func() bool { return len(tasker.Polls(c.tool)) >= c.settle })
			before := rowVersion(t, pool, id)
			until(t, 20*time.Second, "more polls", func() bool { return len(tasker.Polls(c.tool)) >= c.settle+4 })
			if after := rowVersion(t, pool, id); after != before {
				t.Fatalf("polls that said the same wrote the call (row version %s, then %s)", before, after)
			}
		})
	}
}

// rowVersion is the transaction that last wrote the call's row.
func rowVersion(t *testing.T, pool *pgxpool.Pool, id string) string {
	t.Helper()
	var v string
	if err := pool.QueryRow(context.Background(), `select xmin::text from calls where id = $1`, id).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
