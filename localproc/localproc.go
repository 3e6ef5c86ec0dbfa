// Package localproc supervises an instance's local (stdio) servers: each
// one's long-lived process that 2026-07-28 requests share, started with
// the instance, started again with backoff when it exits, and stopped
// with the instance; the logging of every local process's stderr; and the
// record in Postgres of how each runs, so any instance's admin page shows
// every instance's. The processes themselves, and the one a handshake-era
// call gets of its own, are mcpclient's (stdio.go).
package localproc

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

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
	// storeTimeout bounds a write of how a process runs.
	storeTimeout = 30 * time.Second
)

// Config says what a Supervisor runs. Zero values take the defaults.
type Config struct {
	// Locals are the local servers this instance runs; nil for none.
	Locals *mcpclient.Locals
	// InstanceID names this instance in the record and the audit log.
	InstanceID string
	// At most StderrLogLines lines of each server's stderr are logged
	// every StderrLogPeriod; default 1000 a minute.
	StderrLogLines  int
	StderrLogPeriod time.Duration
}

// Supervisor runs an instance's local servers from Start to Stop.
type Supervisor struct {
	store *store.Store
	cfg   Config
	log   *slog.Logger

	stop       context.CancelFunc
	done       sync.WaitGroup
	stderrLogs map[string]*stderrLog
}

// New returns a Supervisor of cfg.Locals; Start starts them.
func New(st *store.Store, cfg Config, log *slog.Logger) *Supervisor {
	if cfg.StderrLogLines <= 0 {
		cfg.StderrLogLines = DefaultStderrLogLines
	}
	if cfg.StderrLogPeriod <= 0 {
		cfg.StderrLogPeriod = DefaultStderrLogPeriod
	}
	return &Supervisor{store: st, cfg: cfg, log: log}
}

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

// Start starts each local server's long-lived process, and the logging of
// every local process's stderr.
func (s *Supervisor) Start(ctx context.Context) {
	locals := s.cfg.Locals
	if locals == nil {
		return
	}
	ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	runs := map[string]*localRun{}
	for _, name := range locals.Names() {
		_, most := locals.Busy(name)
		runs[name] = &localRun{row: store.LocalProcess{Instance: s.cfg.InstanceID, Server: name, Shared: locals.Shared(name),
			MaxSessions: most}, changed: make(chan struct{}, 1)}
	}
	locals.OnSessions(func(server string, running, most int) {
		if r := runs[server]; r != nil {
			r.update(func(p *store.LocalProcess) { p.Sessions, p.MaxSessions = running, most })
		}
	})
	logs := map[string]*stderrLog{}
	for name := range runs {
		logs[name] = newStderrLog(s.log, name, s.cfg.StderrLogLines, s.cfg.StderrLogPeriod, time.Now)
	}
	s.stderrLogs = logs
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
		s.done.Add(2)
		go func() {
			defer s.done.Done()
			s.record(ctx, r)
		}()
		go func() {
			defer s.done.Done()
			if locals.Shared(name) {
				s.run(ctx, name, r)
			}
		}()
	}
}

// Stop stops every long-lived process and waits for them to end.
func (s *Supervisor) Stop() {
	if s.stop != nil {
		s.stop()
		s.done.Wait()
		for _, l := range s.stderrLogs {
			l.stop()
		}
	}
}

// run keeps a local server's process running until ctx ends.
func (s *Supervisor) run(ctx context.Context, name string, r *localRun) {
	log := s.log.With("server", name)
	backoff := localBackoff
	for restarts := 0; ; restarts++ {
		p, err := s.cfg.Locals.Start(name)
		if err != nil {
			log.WarnContext(ctx, "the local server's program could not be started; trying again", "err", err, "in", backoff)
			r.update(func(row *store.LocalProcess) { row.Running, row.LastExit = false, new(err.Error()) })
		} else {
			log.InfoContext(ctx, "local server started", "pid", p.PID, "restarts", restarts)
			r.update(func(row *store.LocalProcess) {
				row.Running, row.Process, row.PID, row.StartedAt, row.Restarts = true, &p.ID, &p.PID, &p.Started, restarts
			})
			if err := s.store.Audit(context.WithoutCancel(ctx), store.AuditEntry{Instance: s.cfg.InstanceID, Actor: "rounds",
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

// record stores how a local server runs each time it changes, at
// most every localFlush, and once more as the instance stops.
func (s *Supervisor) record(ctx context.Context, r *localRun) {
	save := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		if err := s.store.SetLocalProcess(sctx, r.snapshot()); err != nil {
			s.log.WarnContext(ctx, "recording a local server's process", "server", r.row.Server, "err", err)
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
