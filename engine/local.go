package engine

// The jobs' side of local (stdio) servers, whose processes localproc
// supervises: a retry handed over to the instance whose process asked, a
// call waiting for a free process, and a call whose process exited.

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

// handOver sends the retry of round seq, which job runs, to the instance
// whose process asked it, when that is another instance that is alive:
// only that process can open the round's state. It reports whether it did.
func (e *Engine) handOver(ctx context.Context, job queue.Job, callID string, seq int) (bool, error) {
	if seq == 0 || len(e.cfg.Locals.Names()) == 0 {
		return false, nil
	}
	owner, err := e.store.LocalOwner(ctx, callID, seq)
	if err != nil || owner == "" || owner == e.cfg.InstanceID {
		return false, err
	}
	if job.ID == 0 {
		return false, nil
	}
	e.log.InfoContext(ctx, "handing the retry to the instance whose process asked", "call_id", callID, "seq", seq, "instance", owner)
	return true, e.store.HandOver(ctx, job, callID, seq, owner)
}

// sessionProcessEnded ends a handshake-era call whose local process exited
// while the session was open, its question perhaps still waiting for a
// person: the call fails, saying so, and the question is cancelled. It
// reports whether err was such an end.
func (e *Engine) sessionProcessEnded(ctx context.Context, c *store.Call, err error) (bool, error) {
	var exited *mcpclient.ProcessExitedError
	if !errors.As(err, &exited) {
		return false, nil
	}
	e.log.WarnContext(ctx, "the local server's process of a held call exited", "call_id", c.ID, "status", exited.Status)
	msg, _ := describe(err)
	return true, e.store.AbandonHeldCall(ctx, c.ID, msg, true)
}

// waitForProcess says on the call that a handshake-era call (one sent
// with protocol) waits for one of its local server's processes, and
// snoozes its job, when all are busy. name is the local server's, "" for
// a server over HTTP.
func (e *Engine) waitForProcess(ctx context.Context, name, protocol, callID string, seq int) error {
	if name == "" || protocol == "" || protocol >= mcpclient.ProtocolStateless {
		return nil
	}
	if running, most := e.cfg.Locals.Busy(name); running < most {
		return nil
	}
	return e.processesBusy(ctx, name, callID, seq)
}

// processesBusy says on the call that it waits for one of its local
// server's processes, and snoozes its job: its turn comes when a call
// ends and frees one.
func (e *Engine) processesBusy(ctx context.Context, server, callID string, seq int) error {
	_, most := e.cfg.Locals.Busy(server)
	msg := "Waiting for one of the server's " + strconv.Itoa(most) + " processes on this instance: all are busy with other calls."
	if most == 1 {
		msg = "Waiting for the server's process on this instance: it is busy with another call."
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := e.store.SetProgress(ctx, callID, store.Progress{Seq: seq, Message: msg}); err != nil {
		e.log.WarnContext(ctx, "saying a call waits for a process", "call_id", callID, "err", err)
	}
	return river.JobSnooze(localWait)
}

// localWait is how long a call that found its server's processes busy
// waits before it looks again.
const localWait = 2 * time.Second
