package engine

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/mcp-rounds/rounds/queue"
)

// retentionBatch is how many calls (or audit entries) one delete takes:
// small enough that each transaction is short and locks little.
const retentionBatch = 1000

type retentionWorker struct {
	river.WorkerDefaults[queue.RetentionArgs]
	e *Engine
}

func (w *retentionWorker) Timeout(*river.Job[queue.RetentionArgs]) time.Duration {
	return 5 * time.Minute
}

// Work deletes in batches until nothing is left past the cut-off or the
// run's time is up; the next run goes on where this one stopped.
func (w *retentionWorker) Work(ctx context.Context, _ *river.Job[queue.RetentionArgs]) error {
	e := w.e
	stop := time.Now().Add(4 * time.Minute)
	calls, entries := 0, 0
	defer func() {
		if calls > 0 || entries > 0 {
			e.log.InfoContext(ctx, "retention", "calls_deleted", calls, "audit_entries_deleted", entries)
		}
	}()
	for time.Now().Before(stop) {
		n, err := e.store.DeleteFinishedCalls(ctx, time.Now().Add(-e.cfg.Retention), retentionBatch)
		calls += n
		if err != nil {
			return err
		}
		if n < retentionBatch {
			break
		}
	}
	for time.Now().Before(stop) {
		n, err := e.store.PruneAuditLog(ctx, e.cfg.AuditRetention, retentionBatch)
		entries += n
		if err != nil {
			return err
		}
		if n < retentionBatch {
			break
		}
	}
	// Agents' sessions ended, or unused, as long ago as finished calls.
	_, err := e.store.DeleteAgentSessions(ctx, time.Now().Add(-e.cfg.Retention))
	return err
}
