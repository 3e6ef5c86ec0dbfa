package engine

import (
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// observe records one MCP request in the request metrics, and returns its
// row in attempts for the admin pages, to be written with the request's
// outcome. The error text is the client's, which carries neither answers
// nor request state.
func (e *Engine) observe(c *store.Call, seq int, start time.Time, out *mcpclient.Outcome, err error) *store.AttemptRecord {
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
	case out.Round != nil && seq+1 > e.cfg.MaxRounds:
		a.Outcome = store.AttemptTooManyRounds
	case out.Round != nil:
		a.Outcome = store.AttemptInputRequired
	}
	e.cfg.Metrics.ObserveMCP(c.ServerName, c.Method, a.Outcome, d)
	return a
}
