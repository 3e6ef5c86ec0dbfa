package engine

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// Local servers (stdio) run as programs of each instance's own: a
// long-lived process that 2026-07-28 requests share, started with the
// instance, started again with backoff when it exits, and stopped with
// the instance; and a process of its own for each handshake-era call
// (mcpclient/stdio.go). How each runs is kept in Postgres, so any
// instance's admin page shows every instance's.

// How a local server's process is started again after it exits: after
// localBackoff, doubling each time up to localBackoffMax, and from
// localBackoff again once a start has lasted localSteady.
const (
	localBackoff    = time.Second
	localBackoffMax = time.Minute
	localSteady     = time.Minute
	// stderrKept is how many of a process's last stderr lines are shown.
	stderrKept = 20
	// localFlush is how often at most what a process wrote is stored.
	localFlush = time.Second
)

// localRun is how one local server runs on this instance.
type localRun struct {
	mu      sync.Mutex
	row     store.LocalProcess
	changed chan struct{} // gets a value when row changed
}

func (r *localRun) update(f func(p *store.LocalProcess)) {
	r.mu.Lock()
	f(&r.row)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *localRun) snapshot() store.LocalProcess {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.row
	p.Stderr = append([]string{}, r.row.Stderr...)
	return p
}

// startLocals starts each local server's long-lived process, and the
// logging of every local process's stderr.
func (e *Engine) startLocals(ctx context.Context) {
	locals := e.cfg.Locals
	if locals == nil {
		return
	}
	ctx, e.localStop = context.WithCancel(context.WithoutCancel(ctx))
	runs := map[string]*localRun{}
	for _, name := range locals.Names() {
		_, most := locals.Busy(name)
		runs[name] = &localRun{row: store.LocalProcess{Instance: e.cfg.InstanceID, Server: name, Shared: locals.Shared(name),
			MaxSessions: most}, changed: make(chan struct{}, 1)}
	}
	locals.OnSessions(func(server string, running, most int) {
		if r := runs[server]; r != nil {
			r.update(func(p *store.LocalProcess) { p.Sessions, p.MaxSessions = running, most })
		}
	})
	logs := map[string]*stderrLog{}
	for name := range runs {
		logs[name] = newStderrLog(e.log, name, e.cfg.StderrLogLines, e.cfg.StderrLogPeriod)
	}
	e.stderrLogs = logs
	locals.OnStderr(func(server, line string) {
		if l := logs[server]; l != nil {
			l.line(line)
		}
		if r := runs[server]; r != nil {
			r.update(func(p *store.LocalProcess) {
				p.Stderr = append(p.Stderr, line)
				if n := len(p.Stderr); n > stderrKept {
					p.Stderr = p.Stderr[n-stderrKept:]
				}
			})
		}
	})
	for name, r := range runs {
		e.localDone.Add(2)
		go func() {
			defer e.localDone.Done()
			e.recordLocal(ctx, r)
		}()
		go func() {
			defer e.localDone.Done()
			if locals.Shared(name) {
				e.runLocal(ctx, name, r)
			}
		}()
	}
}

// stopLocals stops every long-lived process and waits for them to end.
func (e *Engine) stopLocals() {
	if e.localStop != nil {
		e.localStop()
		e.localDone.Wait()
		for _, l := range e.stderrLogs {
			l.stop()
		}
	}
}

// runLocal keeps a local server's process running until ctx ends.
func (e *Engine) runLocal(ctx context.Context, name string, r *localRun) {
	log := e.log.With("server", name)
	backoff := localBackoff
	for restarts := 0; ; restarts++ {
		p, err := e.cfg.Locals.Start(name)
		if err != nil {
			log.WarnContext(ctx, "the local server's program could not be started; trying again", "err", err, "in", backoff)
			r.update(func(row *store.LocalProcess) { row.Running, row.LastExit = false, new(err.Error()) })
		} else {
			log.InfoContext(ctx, "local server started", "pid", p.PID, "restarts", restarts)
			r.update(func(row *store.LocalProcess) {
				row.Running, row.Process, row.PID, row.StartedAt, row.Restarts = true, &p.ID, &p.PID, &p.Started, restarts
			})
			if err := e.store.Audit(context.WithoutCancel(ctx), store.AuditEntry{Instance: e.cfg.InstanceID, Actor: "rounds",
				Action: "server.process.start", Target: name, Detail: map[string]any{"pid": p.PID, "restarts": restarts}}); err != nil {
				log.WarnContext(ctx, "auditing a local server's start", "err", err)
			}
			select {
			case <-ctx.Done():
				p.Stop()
				log.InfoContext(ctx, "local server stopped", "pid", p.PID)
				r.update(func(row *store.LocalProcess) { row.Running, row.LastExit = false, new("stopped with the instance") })
				return
			case <-p.Done():
			}
			if time.Since(p.Started) >= localSteady {
				backoff = localBackoff
			}
			status := p.Err().Error()
			var exited *mcpclient.ProcessExitedError
			if errors.As(p.Err(), &exited) {
				status = exited.Status
			}
			log.WarnContext(ctx, "the local server's process exited; starting it again", "pid", p.PID, "status", status, "in", backoff)
			r.update(func(row *store.LocalProcess) { row.Running, row.LastExit = false, &status })
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, localBackoffMax)
	}
}

// recordLocal stores how a local server runs each time it changes, at
// most every localFlush, and once more as the instance stops.
func (e *Engine) recordLocal(ctx context.Context, r *localRun) {
	save := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		if err := e.store.SetLocalProcess(sctx, r.snapshot()); err != nil {
			e.log.WarnContext(ctx, "recording a local server's process", "server", r.row.Server, "err", err)
		}
	}
	save()
	for {
		select {
		case <-ctx.Done():
			// The process is stopped by now or stops at once: say so.
			r.update(func(row *store.LocalProcess) { row.Running, row.Sessions = false, 0 })
			save()
			return
		case <-r.changed:
		}
		save()
		select {
		case <-ctx.Done():
		case <-time.After(localFlush):
		}
	}
}

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
