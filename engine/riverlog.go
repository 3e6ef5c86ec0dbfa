package engine

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// riverLog passes River's log on, except its "Job appears to be stuck"
// warning about a request job that holds a handshake-era session open for
// a person's answer: such a job runs past River's job timeout by design,
// bounded by its question's own deadline (held.go), and an operator told
// it is stuck would think something broke. That warning is logged as what
// it is, at info, with the call's id; River's "Job became unstuck" that
// follows when the session ends likewise. Any other job's warning passes
// unchanged.
type riverLog struct {
	next     slog.Handler
	heldCall func(jobID int64) (string, bool)
	// told are the held jobs whose warning was retold, by job id: shared
	// by the handlers WithAttrs and WithGroup derive.
	told *sync.Map
}

func (h *riverLog) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *riverLog) Handle(ctx context.Context, r slog.Record) error {
	stuck := strings.HasSuffix(r.Message, "Job appears to be stuck")
	unstuck := strings.HasSuffix(r.Message, "Job became unstuck")
	if !stuck && !unstuck {
		return h.next.Handle(ctx, r)
	}
	var jobID int64
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "job_id" {
			jobID = a.Value.Int64()
			return false
		}
		return true
	})
	if stuck {
		callID, held := h.heldCall(jobID)
		if !held {
			return h.next.Handle(ctx, r)
		}
		h.told.Store(jobID, callID)
		out := slog.NewRecord(r.Time, slog.LevelInfo, "waiting for a person on a held session (not stuck)", r.PC)
		out.AddAttrs(slog.String("call_id", callID), slog.Int64("job_id", jobID))
		return h.next.Handle(ctx, out)
	}
	callID, ok := h.told.LoadAndDelete(jobID)
	if !ok {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, slog.LevelInfo, "held session's wait ended", r.PC)
	out.AddAttrs(slog.Any("call_id", callID), slog.Int64("job_id", jobID))
	return h.next.Handle(ctx, out)
}

func (h *riverLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &riverLog{next: h.next.WithAttrs(attrs), heldCall: h.heldCall, told: h.told}
}

func (h *riverLog) WithGroup(name string) slog.Handler {
	return &riverLog{next: h.next.WithGroup(name), heldCall: h.heldCall, told: h.told}
}
