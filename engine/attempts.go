package engine

import (
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// observe records one MCP request in the request metrics, and returns its
// row in attempts for the admin pages, to be written with the request's
// outcome. position is where a round it brings back would stand in its
// asking: the cap on rounds counts there, as record does, not by seq, which
// goes on counting across askings. The error text is the client's, which
// carries neither answers nor request state.
func (e *Engine) observe(c *store.Call, seq, position int, start time.Time, out *mcpclient.Outcome, err error) *store.AttemptRecord {
	d := time.Since(start)
	a := &store.AttemptRecord{
		CallID: c.ID, Seq: seq, Instance: e.cfg.InstanceID, StartedAt: start,
		DurationMs: int(d.Milliseconds()), Outcome: store.AttemptResult,
	}
	switch {
	case err != nil:
		a.Outcome = store.AttemptError
		msg := err.Error()
		a.Error = &msg
	case out.Round != nil && position > e.cfg.MaxRounds:
		a.Outcome = store.AttemptTooManyRounds
	case out.Round != nil:
		a.Outcome = store.AttemptInputRequired
	}
	e.cfg.Metrics.ObserveMCP(c.ServerName, c.Method, a.Outcome, d)
	return a
}
