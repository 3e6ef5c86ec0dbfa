package engine

import (
	"context"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// observe records one MCP request: a row in attempts for the admin pages
// and the request metrics. The error text is the client's, which carries
// neither answers nor request state.
func (e *Engine) observe(ctx context.Context, c *store.Call, seq int, start time.Time, d time.Duration, out *mcpclient.Outcome, err error) {
	a := store.AttemptRecord{
		CallID: c.ID, Seq: seq, Instance: e.cfg.InstanceID, StartedAt: start,
		DurationMs: int(d.Milliseconds()), Outcome: store.AttemptResult,
	}
	switch {
	case err != nil:
		a.Outcome = store.AttemptError
		msg := err.Error()
		a.Error = &msg
	case out.Round != nil && seq+1 > e.cfg.MaxRounds:
		a.Outcome = store.AttemptTooManyRounds
	case out.Round != nil:
		a.Outcome = store.AttemptInputRequired
	}
	e.cfg.Metrics.ObserveMCP(c.ServerName, c.Method, a.Outcome, d)
	if err := e.store.RecordAttempt(context.WithoutCancel(ctx), a); err != nil {
		e.log.WarnContext(ctx, "recording an attempt", "call_id", c.ID, "seq", seq, "err", err)
	}
}
