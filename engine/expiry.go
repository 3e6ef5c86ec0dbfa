package engine

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/mcp-rounds/rounds/queue"
)

// periodicJobs are inserted by the River leader only. The job itself may
// run on any instance; the guarded update in ExpireDueRounds, not the
// schedule, is what makes each round expire exactly once.
func (e *Engine) periodicJobs() []*river.PeriodicJob {
	every := e.cfg.ExpiryInterval
	opts := &river.InsertOpts{MaxAttempts: 3}
	if every >= time.Second { // River's shortest unique period
		// One job per interval, however long a run takes.
		opts.UniqueOpts = river.UniqueOpts{ByPeriod: every}
	}
	retain := &river.InsertOpts{MaxAttempts: 3}
	if e.cfg.RetentionInterval >= time.Second {
		retain.UniqueOpts = river.UniqueOpts{ByPeriod: e.cfg.RetentionInterval}
	}
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(every), func() (river.JobArgs, *river.InsertOpts) {
			return queue.ExpiryArgs{}, opts
		}, &river.PeriodicJobOpts{ID: "round_expiry", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(e.cfg.RetentionInterval), func() (river.JobArgs, *river.InsertOpts) {
			return queue.RetentionArgs{}, retain
		}, &river.PeriodicJobOpts{ID: "retention", RunOnStart: true}),
	}
}

type expiryWorker struct {
	river.WorkerDefaults[queue.ExpiryArgs]
	e *Engine
}

func (w *expiryWorker) Timeout(*river.Job[queue.ExpiryArgs]) time.Duration { return time.Minute }

func (w *expiryWorker) Work(ctx context.Context, _ *river.Job[queue.ExpiryArgs]) error {
	expired, err := w.e.store.ExpireDueRounds(ctx, w.e.cfg.InstanceID)
	for _, r := range expired {
		w.e.log.InfoContext(ctx, "round expired", "call_id", r.CallID, "seq", r.Seq, "server", r.Server)
	}
	if err != nil {
		return err
	}
	ended, err := w.e.store.ExpireDueApprovals(ctx)
	for _, id := range ended {
		w.e.log.InfoContext(ctx, "approval ended declined at its deadline", "call_id", id)
	}
	if err != nil {
		return err
	}
	if n, err := w.e.store.WakeTaskWaiters(ctx); err != nil {
		return err
	} else if n > 0 {
		w.e.log.InfoContext(ctx, "calls waiting for a place among their server's tasks woken", "calls", n)
	}
	if n, err := w.e.store.ReclaimLocalJobs(ctx); err != nil {
		return err
	} else if n > 0 {
		w.e.log.InfoContext(ctx, "retries handed to instances that are gone go to any instance", "jobs", n)
	}
	return w.e.store.PruneInstances(ctx)
}

// roundTTL is how long a new round of the server stays answerable: the
// server's own lifetime when an operator set one, else ROUND_TTL.
func (e *Engine) roundTTL(ctx context.Context, serverID int64) time.Duration {
	ttl, err := e.store.ServerRoundTTL(ctx, serverID)
	if err != nil {
		e.log.WarnContext(ctx, "reading the server's round lifetime", "err", err)
	}
	if ttl <= 0 {
		return e.cfg.RoundTTL
	}
	return ttl
}
