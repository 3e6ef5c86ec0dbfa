package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// taskSlotWait is how long a call waiting for a place among its server's
// tasks sleeps before it looks again by itself. The call that gives a
// place up wakes it sooner, and the expiry job makes up for a wake missed
// (store.WakeTaskWaiters): this is only the last resort.
const taskSlotWait = 10 * time.Minute

// errMovedOn ends an attempt whose call moved on before its request was
// sent (a person stopped it): nothing is sent.
var errMovedOn = errors.New("the call moved on before its request was sent")

// taskSlot takes a place among the server's tasks for a request whose
// answer may be a task: a tools/call to a server that runs tasks. With
// none free, the call says so and its request waits: its job is put off in
// the same transaction, and the snooze returned puts it off all the same
// should that have missed it. A request that may go gets nil, and one whose
// call moved on meanwhile errMovedOn.
func (e *Engine) taskSlot(ctx context.Context, job queue.Job, a *store.Attempt, srv mcpclient.Server, seq int) error {
	c := a.Call
	if c.Method != mcpclient.MethodCallTool || !c.ServerRunsTasks || c.TaskID != nil ||
		(srv.Protocol != "" && srv.Protocol < mcpclient.ProtocolStateless) || (c.TaskSlot != nil && *c.TaskSlot == seq) {
		return nil
	}
	most := c.MaxTasks()
	took, err := e.store.TaskSlot(ctx, c.ID, seq, most, store.TaskWait{Message: WaitingForTasks(c.ServerName, most),
		After: taskSlotWait, Job: job})
	switch {
	case errors.Is(err, store.ErrConflict):
		return errMovedOn
	case err != nil || took:
		return err
	}
	e.log.InfoContext(ctx, "the server runs as many tasks as it may: the call waits", "call_id", c.ID, "seq", seq, "max_tasks", most)
	return river.JobSnooze(taskSlotWait)
}

// WaitingForTasks is what the page of a call says while it waits for one
// of the server's tasks to end.
func WaitingForTasks(server string, most int) string {
	tasks := strconv.Itoa(most) + " tasks"
	if most == 1 {
		tasks = "1 task"
	}
	return "Waiting: " + server + " already runs " + tasks + "; this call starts when one ends."
}
