package engine

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// escalateWorker gives a round nobody answered in time to the one its plan
// names (store.EscalateRound). It was scheduled in the round's own
// transaction; a round answered meanwhile makes it do nothing.
type escalateWorker struct {
	river.WorkerDefaults[queue.EscalateArgs]
	e *Engine
}

func (w *escalateWorker) Work(ctx context.Context, job *river.Job[queue.EscalateArgs]) error {
	if job.Args.Seq == store.ApprovalSeq {
		return w.escalateApproval(ctx, job.Args.CallID)
	}
	plan, err := w.e.store.RoundPlan(ctx, job.Args.CallID, job.Args.Seq)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	now := w.e.cfg.Now()
	if plan.EscalateAt != nil && plan.EscalateAt.After(now) {
		// River goes by the database's clock, which may be a little ahead
		// of this one: come back when this one says so.
		return river.JobSnooze(plan.EscalateAt.Sub(now) + 100*time.Millisecond)
	}
	esc, err := w.e.store.EscalateRound(ctx, w.e.cfg.InstanceID, job.Args.CallID, job.Args.Seq, now)
	if err != nil || esc == nil {
		return err
	}
	if esc.Why != "" {
		w.e.log.InfoContext(ctx, "round escalated to the admins' queue", "call_id", job.Args.CallID, "seq", job.Args.Seq,
			"from", esc.From, "to", esc.To, "planned", esc.Planned, "why", esc.Why)
		return nil
	}
	w.e.log.InfoContext(ctx, "round escalated", "call_id", job.Args.CallID, "seq", job.Args.Seq, "from", esc.From, "to", esc.To)
	return nil
}

// deadlineWorker answers a round nobody answered by its deadline as its
// plan declares (decline or cancel), so the server's tool goes on with
// that answer instead of the call expiring. A round answered or ended
// meanwhile makes it do nothing.
type deadlineWorker struct {
	river.WorkerDefaults[queue.DeadlineArgs]
	e *Engine
}

func (w *deadlineWorker) Work(ctx context.Context, job *river.Job[queue.DeadlineArgs]) error {
	call, r, onExpiry, err := w.e.store.DeadlineRound(ctx, job.Args.CallID, job.Args.Seq)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	now := w.e.cfg.Now()
	if wait := r.ExpiresAt.Sub(now); wait > 0 {
		return river.JobSnooze(wait + 100*time.Millisecond)
	}
	a, err := round.DeadlineAnswer(call, r, onExpiry)
	if errors.Is(err, round.ErrNotWaiting) {
		return nil
	}
	if err != nil {
		// Nothing to send: the expiry sweep ends the round within the hour.
		w.e.log.WarnContext(ctx, "the deadline's answer cannot be made; the round will expire", "call_id", call.ID, "err", err)
		return nil
	}
	done, err := w.e.store.AnswerAtDeadline(ctx, w.e.cfg.InstanceID, call.ID, r.Seq, a.Responses, a.Refusal, now)
	if done {
		w.e.log.InfoContext(ctx, "round answered at its deadline", "call_id", call.ID, "seq", r.Seq, "on_expiry", onExpiry)
	}
	return err
}

// escalateApproval adds the escalation's target to a call's approval
// nobody decided by its escalation time (store.EscalateApproval); an
// approval decided meanwhile makes it do nothing.
func (w *escalateWorker) escalateApproval(ctx context.Context, callID string) error {
	at, err := w.e.store.ApprovalEscalateAt(ctx, callID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && at == nil) {
		return nil
	}
	if err != nil {
		return err
	}
	now := w.e.cfg.Now()
	if at.After(now) {
		return river.JobSnooze(at.Sub(now) + 100*time.Millisecond)
	}
	esc, err := w.e.store.EscalateApproval(ctx, w.e.cfg.InstanceID, callID, now)
	if err != nil || esc == nil {
		return err
	}
	w.e.log.InfoContext(ctx, "approval escalated", "call_id", callID, "to", esc.To, "added", esc.Added, "why", esc.Why)
	return nil
}
