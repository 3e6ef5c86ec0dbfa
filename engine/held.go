package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// How a job holding a handshake-era session looks after its question.
const (
	heldPoll      = 2 * time.Second // in case a notification was lost
	heldKeepAlive = 3 * time.Second // keeps River's rescuer off the job
)

// held answers a handshake-era server's mid-call questions: each becomes a
// round of the call, stored like any other and answered on any instance,
// while this job keeps the session open and waits. s learns that the
// session was held, and the round each question became.
func (e *Engine) held(ctx context.Context, jobID int64, c *store.Call, s *session, cancel context.CancelFunc) *mcpclient.Held {
	return &mcpclient.Held{
		Sending: func(ctx context.Context) error {
			e.holdMu.Lock()
			stopping := e.stopping
			if !stopping {
				e.holding[jobID] = heldJob{cancel: cancel, callID: c.ID}
			}
			e.holdMu.Unlock()
			if stopping {
				return errors.New("this instance is stopping")
			}
			s.hold()
			// From here until the result is stored, the job may run far
			// past River's timeout: tell River it is alive, all along.
			go e.keepAlive(ctx, jobID)
			return e.store.MarkHandshake(ctx, c.ID)
		},
		Ask: func(ctx context.Context, q mcpclient.Question) (json.RawMessage, error) {
			seq, afresh := s.next()
			n, answer, err := e.hold(ctx, c, seq, afresh, q)
			if n > 0 {
				s.asked(n)
			}
			return answer, err
		},
		Completed: func(elicitationID string) {
			if err := e.store.CompleteURLElicitation(context.WithoutCancel(ctx), c.ID, elicitationID); err != nil {
				e.log.WarnContext(ctx, "recording a finished URL step", "call_id", c.ID, "err", err)
			}
		},
	}
}

// hold stores the question the server asked after round seq as a round,
// and waits for its answer. It returns the round the question became (0
// when none was stored) and the answer to send back.
func (e *Engine) hold(ctx context.Context, c *store.Call, seq int, afresh bool, q mcpclient.Question) (int, json.RawMessage, error) {
	cancel := json.RawMessage(`{"action":"cancel"}`)
	if seq+1 > e.cfg.MaxRounds {
		return 0, cancel, nil
	}
	requests, err := heldRequests(q)
	if err != nil {
		return 0, nil, err
	}
	var p struct {
		ElicitationID string `json:"elicitationId"`
	}
	_ = json.Unmarshal(q.Params, &p)
	timeout := e.cfg.HeldTimeout
	if c.ServerHeldSeconds > 0 {
		timeout = time.Duration(c.ServerHeldSeconds * float64(time.Second))
	}
	// Subscribe before the round exists, so no answer goes unheard.
	var notes <-chan struct{}
	if e.cfg.Notifier != nil {
		var stop func()
		notes, stop = e.cfg.Notifier.Subscribe(c.ID)
		defer stop()
	}
	n, err := e.store.AddHeldRound(ctx, c.ID, seq, store.HeldRound{
		InputRequests: requests, ElicitationID: p.ElicitationID, HeldBy: e.cfg.InstanceID,
		ExpiresAt: time.Now().Add(timeout), Afresh: afresh, Asks: roundAsks(c, []mcpclient.Question{q}),
	})
	if err != nil {
		return 0, nil, err
	}
	log := e.log.With("call_id", c.ID, "seq", n)
	log.InfoContext(ctx, "holding a question asked mid-call", "deadline", timeout)

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(heldPoll)
	defer poll.Stop()
	for {
		r, err := e.store.Round(ctx, c.ID, n)
		if err != nil {
			return n, nil, err
		}
		switch r.Status {
		case store.RoundAnswered:
			var responses map[string]json.RawMessage
			if err := json.Unmarshal(r.Responses, &responses); err != nil || responses[q.Key] == nil {
				return n, nil, errors.New("the stored answer cannot be read")
			}
			log.InfoContext(ctx, "answer returned on the held session")
			return n, responses[q.Key], nil
		case store.RoundExpired, store.RoundCancelled:
			return n, cancel, nil
		}
		select {
		case <-ctx.Done():
			return n, nil, ctx.Err()
		case <-notes:
		case <-poll.C:
		case <-deadline.C:
			expired, err := e.store.ExpireHeldRound(ctx, c.ID, n)
			if err != nil {
				return n, nil, err
			}
			if expired {
				// The spec's cancel: the person made no choice in time.
				log.InfoContext(ctx, "held question expired; cancelling it towards the server")
				return n, cancel, nil
			}
		}
	}
}

// heldRequests is the round's inputRequests for a question asked on a
// session, its params byte for byte as the server sent them (json.Marshal
// would escape the server's &, < and > anew).
func heldRequests(q mcpclient.Question) (json.RawMessage, error) {
	if !json.Valid(q.Params) {
		return nil, errors.New("the question's params are not JSON")
	}
	key, err := json.Marshal(q.Key)
	if err != nil {
		return nil, err
	}
	method, err := json.Marshal(q.Method)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(q.Params)+len(key)+len(method)+24)
	out = append(append(append(out, '{'), key...), `:{"method":`...)
	out = append(append(append(out, method...), `,"params":`...), q.Params...)
	return append(out, "}}"...), nil
}

// keepAlive tells River's rescuer that job is being worked, until ctx ends:
// often enough that the job never looks orphaned while its session is open.
func (e *Engine) keepAlive(ctx context.Context, jobID int64) {
	every := min(heldKeepAlive, e.cfg.RescueAfter/3)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := e.store.KeepJobAlive(ctx, jobID); err != nil && ctx.Err() == nil {
				e.log.WarnContext(ctx, "keeping the held job alive", "job_id", jobID, "err", err)
			}
		}
	}
}

// heldJob is a job holding a handshake-era session open.
type heldJob struct {
	cancel context.CancelFunc
	callID string
}

// heldCall returns the call whose session job holds open, if it does.
func (e *Engine) heldCall(jobID int64) (string, bool) {
	e.holdMu.Lock()
	defer e.holdMu.Unlock()
	h, ok := e.holding[jobID]
	return h.callID, ok
}

// release forgets a job's held session.
func (e *Engine) release(jobID int64) {
	e.holdMu.Lock()
	delete(e.holding, jobID)
	e.holdMu.Unlock()
}

// orphaned ends a handshake-era call whose holding instance died: the
// server's session went with it. Sending the call again would repeat its
// side effects, so it is not retried.
func (e *Engine) orphaned(ctx context.Context, c *store.Call) error {
	e.log.WarnContext(ctx, "held session lost with its instance", "call_id", c.ID)
	if _, local := c.Server().Local(); local {
		return e.store.AbandonHeldCall(ctx, c.ID,
			"The server's process stopped with the instance that ran it, while this call was open on it, "+
				"so its answer will not come. The call was not sent again by itself, since repeating it could repeat what it does: "+
				"start it again if you want it, your answers filled in.", true)
	}
	return e.store.AbandonHeldCall(ctx, c.ID,
		"The instance holding this call's session with the server stopped, so the server's session is gone. "+
			"The call was not sent again, since repeating it could repeat what it does. Start it again if you want it.", false)
}

// session is what a job learns while a handshake-era server holds its
// request open: whether it did, and the round its latest question became.
// The SDK's goroutines write it as the server asks; the job reads it once
// the request has returned.
type session struct {
	mu       sync.Mutex
	held     bool
	seq      int
	afresh   bool // the first question begins a new asking
	askedAny bool
}

func (s *session) hold() {
	s.mu.Lock()
	s.held = true
	s.mu.Unlock()
}

// asked moves the session on to the round its latest question became.
func (s *session) asked(seq int) {
	s.mu.Lock()
	s.seq, s.askedAny = seq, true
	s.mu.Unlock()
}

// next is where the next question goes: after the round of the latest,
// and whether it begins a new asking.
func (s *session) next() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq, s.afresh && !s.askedAny
}

// round is the round of the latest question asked, or the request's own.
func (s *session) round() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// learnt returns what the request learnt: held, and the round it is at.
func (s *session) learnt() (bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held, s.seq
}
