package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// request sends the request of round seq (0 for the first) and stores what
// came back. Errors returned are the store's: River retries them.
func (e *Engine) request(ctx context.Context, jobID int64, attempt int, callID string, seq int) error {
	log := e.log.With("call_id", callID, "seq", seq)
	if attempt > 1 {
		c, err := e.store.Call(ctx, callID)
		if err != nil {
			return err
		}
		if c.Handshake && !c.Finished() {
			// The session this call was asked on died with its instance.
			return e.orphaned(ctx, c)
		}
	}
	if moved, err := e.handOver(ctx, callID, seq); moved || err != nil {
		return err
	}
	a, err := e.store.StartAttempt(ctx, callID, seq)
	switch {
	case errors.Is(err, store.ErrConflict):
		log.InfoContext(ctx, "request already handled")
		return nil
	case errors.Is(err, store.ErrNotFound):
		log.InfoContext(ctx, "call deleted before its request")
		return nil
	case err != nil:
		return err
	}
	return e.attempt(ctx, jobID, a, seq)
}

// attempt sends the request of round seq that a loaded, and stores what
// came back: in a River job, or sent directly by the instance that
// committed it (direct.go).
func (e *Engine) attempt(ctx context.Context, jobID int64, a *store.Attempt, seq int) error {
	callID, log := a.Call.ID, e.log.With("call_id", a.Call.ID, "seq", seq)
	direct := sendingDirect(ctx)
	if _, local := mcpclient.LocalName(a.Call.ServerURL); direct && local {
		// A local server's request may belong to another instance's
		// process, or wait for a free one: River's job hands it over.
		return errToRiver
	}
	if a.Round != nil && a.Round.Task {
		// A task's question: its answers go to the task, not in a retry.
		return e.answerTask(ctx, a, seq)
	}
	srv, req, answers, err := e.prepare(a)
	if err != nil {
		return e.store.FailCall(ctx, callID, seq, "The call failed: "+err.Error(), false)
	}
	token, renewable, err := e.renewDue(ctx, a.Token, a.Call.ServerID, a.Call.Owner, "")
	if err != nil {
		return err
	}
	srv.Token = token
	if err := e.waitForProcess(ctx, srv, callID, seq); err != nil {
		return err
	}
	// Requests to 2026-07-28 servers are bounded by the MCP client's own
	// timeout. A held session outlives River's job timeout, so it runs on a
	// context of its own, bounded by every question's deadline.
	base := context.WithoutCancel(ctx)
	if direct {
		// Sent directly, it holds no session (below), and ends with the
		// direct send's deadline, before its job falls due.
		base = ctx
	}
	sendCtx, cancel := context.WithTimeout(base, e.cfg.RequestTimeout+time.Duration(e.cfg.MaxRounds)*e.cfg.HeldTimeout)
	defer cancel()
	defer e.release(jobID)
	// A request from a held round (a person started a call again whose
	// session ended) opens a new session: its questions begin a new asking.
	s := &session{seq: seq, afresh: a.Round != nil && a.Round.HeldBy != nil}
	srv.Held = e.held(context.WithoutCancel(ctx), jobID, a.Call, s, cancel)
	if direct {
		// A handshake-era server may hold the call open for minutes,
		// past the safety net's delay: River takes it, as before.
		srv.Held.Sending = func(context.Context) error { return errToRiver }
	}
	stopped, unwatch := e.watchStop(sendCtx, callID, cancel)
	var progressed func()
	srv.Progress, progressed = e.progress(callID, seq)
	sent, err := e.send(ctx, sendCtx, srv, req, answers, a.Call, renewable)
	progressed()
	unwatch()
	if err != nil {
		return err
	}
	if direct && errors.Is(sent.err, errToRiver) {
		return errToRiver
	}
	if name, local := mcpclient.LocalName(srv.URL); local && errors.Is(sent.err, mcpclient.ErrProcessesBusy) {
		// Another call took the last process first: wait for a turn.
		return e.processesBusy(ctx, name, callID, seq)
	}
	if stopped() {
		// The request's stream was closed, which tells the server to stop;
		// the call is already cancelled.
		log.InfoContext(ctx, "call stopped while its request ran")
		return nil
	}
	held, seq := s.learnt()
	// River's context for this job ends after RequestTimeout, while a
	// person may have answered a held question minutes later: what follows
	// the answer (the result, the next round, the audit) is stored on a
	// context of its own.
	ctx, cancelStore := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancelStore()
	if sent.err != nil && held && sendCtx.Err() != nil {
		// This instance is stopping: the session goes with it.
		return e.orphaned(ctx, a.Call)
	}
	if held && sent.err != nil {
		if ended, err := e.sessionProcessEnded(ctx, a.Call, sent.err); ended {
			return err
		}
	}
	err = e.record(ctx, a, seq, held, answers, sent)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		// Someone else finished this request meanwhile (a rescued
		// duplicate), or the call was deleted.
		return nil
	}
	return err
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

// prepare builds what the attempt sends: the server with its headers and
// capabilities, the request, and the answers of the round it retries (none
// for a first request, or one sent afresh).
func (e *Engine) prepare(a *store.Attempt) (mcpclient.Server, mcpclient.Request, *mcpclient.Answers, error) {
	c := a.Call
	req := mcpclient.Request{Method: c.Method, Name: c.Target, Arguments: c.Arguments}
	if c.Method == mcpclient.MethodReadResource {
		req = mcpclient.Request{Method: c.Method, URI: c.Target}
	}
	var answers *mcpclient.Answers
	// A held round's answers went back on its session; a request from
	// one starts a new session, without answers.
	if a.Round != nil && !a.Afresh() && a.Round.HeldBy == nil {
		answers = &mcpclient.Answers{InputResponses: a.Round.Responses, RequestState: a.Round.RequestState}
		if a.Round.Process != nil {
			answers.Process = *a.Round.Process
		}
	}
	header, err := e.store.CallHeader(c)
	if err != nil {
		return mcpclient.Server{}, req, nil, err
	}
	srv := mcpclient.Server{URL: c.ServerURL, Header: header, Capabilities: e.capabilities(c.ServerSampling, c.ServerRoots),
		Roots: mcpRoots(c.ServerRootsList)}
	if c.ServerProtocol != "" && c.ServerProtocol != "auto" {
		srv.Protocol = c.ServerProtocol
	}
	if c.Protocol != nil && *c.Protocol != "" && *c.Protocol != "auto" {
		// Asked for when the call was started, or learnt for its tool.
		srv.Protocol = *c.Protocol
	}
	if c.Method == mcpclient.MethodCallTool {
		// Arguments marked x-mcp-header travel as Mcp-Param-* headers too
		// (the schema was read with the call, in StartAttempt).
		if ph := mcpclient.ParamHeaders(a.HeaderSchema, c.Arguments); ph != nil {
			merged := srv.Header.Clone()
			if merged == nil {
				merged = http.Header{}
			}
			for k, v := range ph {
				merged[k] = v
			}
			srv.Header = merged
		}
	}
	return srv, req, answers, nil
}

// sent is what a request came back with, and when it was sent.
type sent struct {
	out   *mcpclient.Outcome
	err   error
	start time.Time
}

// send sends the request; a token refused before it ran out is renewed and
// the request sent once more. The error returned is the store's, from the
// renewal; what the server said is in sent.
func (e *Engine) send(ctx, sendCtx context.Context, srv mcpclient.Server, req mcpclient.Request, answers *mcpclient.Answers,
	c *store.Call, renewable bool) (sent, error) {
	r := sent{start: time.Now()}
	r.out, r.err = e.mcp.Send(sendCtx, srv, req, answers)
	var authErr *mcpclient.AuthRequiredError
	if errors.As(r.err, &authErr) && authErr.Status == 401 && renewable {
		var err error
		if srv.Token, _, err = e.accessToken(ctx, c.ServerID, c.Owner, srv.Token); err != nil {
			return r, err
		}
		if srv.Token != "" {
			r.out, r.err = e.mcp.Send(sendCtx, srv, req, answers)
		}
	}
	return r, nil
}

// record stores what the request of round seq came back with: the result,
// the next round, or why it failed, with the attempt's record and the
// job's completion in the same transaction. An instance that dies before
// that commit leaves neither, and the rescued job sends the request again.
func (e *Engine) record(ctx context.Context, a *store.Attempt, seq int, held bool, answers *mcpclient.Answers, r sent) error {
	c, out, err := a.Call, r.out, r.err
	log := e.log.With("call_id", c.ID, "seq", seq, "duration", time.Since(r.start).Round(time.Millisecond))
	asking, position := a.NextPlace()
	o := outcome(ctx, e.observe(c, seq, position, r.start, out, err))
	var session string // what the server said when its tool wanted a session
	if c.Method == mcpclient.MethodCallTool && !held {
		session = mcpclient.AsksOverSession(out, err)
	}
	if session != "" {
		// Learnt before the outcome is stored: the page that hears of the
		// outcome reads the call once, and must find the offer on it.
		log.InfoContext(ctx, "the tool asks over a 2025-11-25 session; its next calls go over one")
		if lerr := e.store.LearnSessionTool(ctx, c.ID, c.ServerID, c.Target, mcpclient.ProtocolHandshake, session); lerr != nil {
			log.WarnContext(ctx, "learning that the tool asks over a session", "err", lerr)
		}
	}
	var authErr *mcpclient.AuthRequiredError
	switch {
	case err != nil && session != "":
		// Retrying the same way would fail the same way.
		return e.store.FailCall(ctx, c.ID, seq, "This tool asks its questions over a 2025-11-25 session, and this call "+
			"went over 2026-07-28, so the server could not ask them. It said: "+session, false, o)
	case errors.As(err, &authErr):
		log.InfoContext(ctx, "the server asks for authorization", "status", authErr.Status)
		if rerr := e.store.RecordAttempt(ctx, *o.Attempt); rerr != nil {
			log.WarnContext(ctx, "recording an attempt", "err", rerr)
		}
		return e.needsAuthorization(ctx, c, seq, authErr)
	case err != nil && answers != nil && answers.RequestState != nil && mcpclient.StateExpired(err):
		log.InfoContext(ctx, "the server no longer knows the round's state", "age", time.Since(a.Round.CreatedAt).Round(time.Second))
		return e.stateRefused(ctx, a, o)
	case err != nil:
		if wait, ok := mcpclient.Transient(err); ok && !held {
			if snooze, ok := e.retryLater(ctx, c, seq, err, wait); ok {
				// The job goes on later: only the attempt is recorded now.
				if rerr := e.store.RecordAttempt(ctx, *o.Attempt); rerr != nil {
					log.WarnContext(ctx, "recording an attempt", "err", rerr)
				}
				return snooze
			}
		}
		log.WarnContext(ctx, "request failed", "err", err)
		msg, retryable := describe(err)
		return e.store.FailCall(ctx, c.ID, seq, msg, retryable, o)
	case out.Task != nil:
		return e.startTask(ctx, log, a, seq, out.Task, o)
	case out.Round != nil && position > e.cfg.MaxRounds:
		log.WarnContext(ctx, "too many rounds")
		return e.store.FailCall(ctx, c.ID, seq,
			fmt.Sprintf("The server asked for more than %d rounds of input; the call was stopped.", e.cfg.MaxRounds), false, o)
	case out.Round != nil:
		return e.addRound(ctx, log, a, seq, out.Round, asking, position, o)
	default:
		log.InfoContext(ctx, "call complete")
		return e.store.CompleteCall(ctx, c.ID, seq, json.RawMessage(out.Result), o)
	}
}

// addRound stores the round the request came back with: for a person to
// answer, or answered at once (roots from the settings, or the answers
// given to the same questions before the server was asked afresh).
func (e *Engine) addRound(ctx context.Context, log *slog.Logger, a *store.Attempt, seq int, r *mcpclient.Round,
	asking, position int, o store.Outcome) error {
	c := a.Call
	log.InfoContext(ctx, "round received", "questions", len(r.Questions))
	ttl := a.RoundTTL
	if ttl <= 0 {
		ttl = e.cfg.RoundTTL
	}
	next := store.NewRound{
		InputRequests: r.InputRequests,
		RequestState:  r.RequestState,
		ExpiresAt:     time.Now().Add(ttl),
		Responses:     autoAnswers(r.Questions, c.ServerRootsList),
		Instance:      e.cfg.InstanceID,
		Asking:        asking,
		Position:      position,
		Process:       r.Process,
	}
	if before := answeredBefore(a, r); before != nil {
		log.InfoContext(ctx, "the same questions as before the server was asked afresh: answered again", "from_seq", before.Seq)
		next.Responses, next.Again = before.Responses, before
		e.cfg.Metrics.AnsweredAgain(c.ServerName)
	}
	return e.store.AddRound(ctx, c.ID, seq, next, o)
}

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
