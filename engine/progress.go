package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// watchStop cancels a request whose call is cancelled meanwhile, on any
// instance (a person pressed Stop, or the API cancelled it): closing the
// request's stream is how the spec tells the server to stop. stopped says
// whether it did; unwatch ends the watch.
func (e *Engine) watchStop(ctx context.Context, callID string, cancel context.CancelFunc) (stopped func() bool, unwatch func()) {
	var did atomic.Bool
	n := e.cfg.Notifier
	if n == nil {
		return did.Load, func() {}
	}
	done := make(chan struct{})
	go func() {
		// Most requests are answered before anyone could press Stop, and a
		// cancelled call drops what its request brings back anyway: the
		// watch begins only for a request still running after a moment.
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(stopWatchAfter):
		}
		changed, latest, stop := n.Watch(callID)
		defer stop()
		status := ""
		if c, err := e.store.Call(ctx, callID); err == nil { // a stop before the watch began
			status = c.Status
		}
		for status != store.CallCancelled {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-changed:
			}
			if note := latest(); note != nil {
				status = note.Status
			} else if c, err := e.store.Call(ctx, callID); err == nil {
				status = c.Status
			}
		}
		did.Store(true)
		cancel()
	}()
	return did.Load, func() { close(done) }
}

// stopWatchAfter is how long a request runs before its call is watched for
// a stop.
const stopWatchAfter = 500 * time.Millisecond

// progressEvery is how often at most a request's progress is stored: the
// server may say it many times a second.
const progressEvery = 500 * time.Millisecond

// progress keeps what the server says of request seq's progress while it
// runs, the latest at most every progressEvery, for every instance's page
// and the API. done is called once the request has returned: what was
// said last is stored before it returns.
func (e *Engine) progress(callID string, seq int) (report func(mcpclient.Progress), done func()) {
	latest := make(chan store.Progress, 1)
	ending, finished := make(chan struct{}), make(chan struct{})
	var start sync.Once // most requests say nothing of their progress: no writer for them
	writer := func() {
		defer close(finished)
		for p := range latest {
			ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			if err := e.store.SetProgress(ctx, callID, p); err != nil {
				e.log.WarnContext(ctx, "storing a request's progress", "call_id", callID, "err", err)
			}
			cancel()
			select { // once the request has returned, the last is stored at once
			case <-time.After(progressEvery):
			case <-ending:
			}
		}
	}
	started := false
	report = func(p mcpclient.Progress) {
		start.Do(func() { started = true; go writer() })
		sp := store.Progress{Seq: seq, Progress: p.Progress, Total: p.Total, Message: p.Message}
		for {
			select {
			case latest <- sp:
				return
			default:
			}
			select { // an older one not yet stored gives way
			case <-latest:
			default:
			}
		}
	}
	return report, func() {
		start.Do(func() {}) // no report comes after this
		if !started {
			return
		}
		close(ending)
		close(latest)
		<-finished
	}
}
