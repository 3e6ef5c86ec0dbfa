package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mcp-rounds/rounds/store"
)

// A round's request is sent by the instance that committed its answer (or
// the call), at once, on a bounded set of goroutines: its River job is
// inserted in the same transaction but scheduled for later, as a safety
// net, and the outcome's transaction removes it (see store.Direct). The
// request then costs no fetch, read or completion of a job, and waits for
// no worker to be told.

// directMargin is how much longer than a request may take its safety-net
// job waits before River may send it: the outcome's commit, and the
// store's reads before the request. The direct send is given up at
// RequestTimeout, so River never sends while it still runs.
const directMargin = 5 * time.Second

// errToRiver ends a direct send that must go River's way instead: the job
// is made due at once.
var errToRiver = errors.New("the request goes through River")

// directSends runs the requests sent directly.
type directSends struct {
	mu       sync.Mutex
	stopping bool
	running  sync.WaitGroup
	slots    chan struct{}
}

type directKey struct{}

// sendingDirect says whether ctx is a direct send's.
func sendingDirect(ctx context.Context) bool {
	d, _ := ctx.Value(directKey{}).(bool)
	return d
}

// SendsNow returns a context on which a transaction that enqueues a
// request (an answer, a new call) schedules its job as a safety net and
// reads what the request needs, and a function that, called once that
// transaction has committed, sends the request at once. Without an engine
// the request goes River's way.
func (e *Engine) SendsNow(ctx context.Context) (context.Context, func()) {
	if e == nil || e.direct == nil {
		return ctx, func() {}
	}
	ctx, d := store.WithDirect(ctx, e.cfg.RequestTimeout+directMargin)
	return ctx, func() { e.sendNow(d) }
}

// sendNow sends d's request on one of the engine's direct senders; with
// none free, or while the engine stops, the job is made due for River.
func (e *Engine) sendNow(d *store.Direct) {
	if d.Job == 0 || d.Attempt == nil {
		return // nothing was enqueued: a held round's answer, a refusal
	}
	s := e.direct
	s.mu.Lock()
	free := !s.stopping
	if free {
		select {
		case s.slots <- struct{}{}:
			s.running.Add(1)
		default:
			free = false
		}
	}
	s.mu.Unlock()
	if !free {
		e.handToRiver(d.Job)
		return
	}
	go func() {
		defer func() { <-s.slots; s.running.Done() }()
		e.sendDirect(d)
	}()
}

// sendDirect runs d's attempt as River would run its job, bounded by the
// request's timeout, and leaves the job to River if the attempt did not
// store its outcome.
func (e *Engine) sendDirect(d *store.Direct) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.RequestTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, directKey{}, true)
	ctx = context.WithValue(ctx, jobKey{}, &rivertype.JobRow{ID: d.Job})
	c := d.Attempt.Call
	err := e.attempt(ctx, d.Job, d.Attempt, c.CurrentSeq)
	var snooze *rivertype.JobSnoozeError
	switch {
	case err == nil:
	case errors.Is(err, errToRiver):
		e.handToRiver(d.Job)
	case errors.As(err, &snooze):
		// The server could not take it: sent again when River's snooze
		// would have.
		pctx, pcancel := context.WithTimeout(context.Background(), storeTimeout)
		defer pcancel()
		if perr := e.store.PutOffJob(pctx, d.Job, time.Now().Add(snooze.Duration)); perr != nil {
			e.log.WarnContext(pctx, "putting off a request sent directly", "call_id", c.ID, "err", perr)
		}
	default:
		// The store failed: River sends it when its job falls due.
		e.log.WarnContext(ctx, "a request sent directly is left to River", "call_id", c.ID, "err", err)
	}
}

// handToRiver makes a direct send's job due now; should that fail, River
// sends it when it falls due all the same.
func (e *Engine) handToRiver(job int64) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := e.store.HandToRiver(ctx, job); err != nil {
		e.log.WarnContext(ctx, "handing a request to River", "job", job, "err", err)
	}
}

// stop takes no more direct sends and waits for those running until
// ctx ends; any still running then are left to River's safety net.
func (s *directSends) stop(ctx context.Context) {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
