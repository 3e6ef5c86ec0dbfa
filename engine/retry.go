package engine

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// maxRetryBackoff caps the wait between two tries of a request the server
// could not take.
const maxRetryBackoff = time.Minute

// retryLater puts off a request that provably did not reach the server, or
// that the server asked to have sent later, and returns the snooze that
// makes River run the same job again then, on any instance. It returns
// false once RetryWindow has passed since the first such failure: the call
// then fails as any other, with the manual retry.
func (e *Engine) retryLater(ctx context.Context, c *store.Call, seq int, err error, asked time.Duration) (error, bool) {
	if e.cfg.RetryWindow < 0 {
		return nil, false
	}
	// Each wait is as long as the time already spent trying: the gaps
	// double, from RetryBackoff up to a minute, with some jitter so that
	// many calls to one server do not come back at the same moment.
	now := e.cfg.Now()
	wait := e.cfg.RetryBackoff
	if c.RetrySince != nil {
		wait = max(wait, min(now.Sub(*c.RetrySince), maxRetryBackoff))
	}
	wait += rand.N(wait/5 + 1)
	wait = max(wait, asked)
	at, ok, derr := e.store.DeferRequest(context.WithoutCancel(ctx), c.ID, seq, mcpclient.Reason(err), wait, asked, e.cfg.RetryWindow, now)
	if derr != nil {
		// Postgres is out too: River's own retry takes the job again.
		return derr, true
	}
	if !ok {
		return nil, false
	}
	e.log.InfoContext(ctx, "server unreachable; trying again later", "call_id", c.ID, "seq", seq,
		"at", at, "err", err)
	return river.JobSnooze(max(at.Sub(now), 0)), true
}
