package engine

import (
	"context"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mcp-rounds/rounds/queue"
)

// RunEscalation runs the escalation job of round seq of a call now, as
// River runs it once it falls due.
func (e *Engine) RunEscalation(ctx context.Context, callID string, seq int) error {
	return (&escalateWorker{e: e}).Work(ctx, &river.Job[queue.EscalateArgs]{JobRow: &rivertype.JobRow{},
		Args: queue.EscalateArgs{CallID: callID, Seq: seq}})
}

// RunDeadline runs the deadline job of round seq of a call now, as River
// runs it once it falls due.
func (e *Engine) RunDeadline(ctx context.Context, callID string, seq int) error {
	return (&deadlineWorker{e: e}).Work(ctx, &river.Job[queue.DeadlineArgs]{JobRow: &rivertype.JobRow{},
		Args: queue.DeadlineArgs{CallID: callID, Seq: seq}})
}
