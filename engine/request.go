package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// A request (the first of a call, or the retry carrying a round's answers)
// goes one of three roads, each a step of its own below, and each ends in
// attempt, which sends it (mcpclient) and stores what came back:
//
//   - sent directly: the instance that commits an answer or a new call
//     (Answer, StartCall) sends its request at once (sendNow, sendDirect),
//     its River job inserted in the same transaction but scheduled for
//     later, as a safety net (store.Direct), and removed with the outcome;
//   - River's job (requestWorker.Work, request): what no instance sends
//     directly (a safety net that fell due, a request handed to River, an
//     automatic answer's retry, a retried call), on any instance;
//   - handed over (request, handOver in local.go): the retry of a round a
//     local server's process asked on another instance goes to that
//     instance's own queue, where River's job runs it.
//
// The job a request runs as (queue.Job) goes down the road as a parameter:
// the outcome's transaction completes it, or removes the safety net.

// Answer stores a person's answer to a round, as a.Decide checks it
// (store.AnswerChecked), and sends the retry it enqueued at once from this
// instance: answering a round is this one call. A.SendAfter is the
// engine's to set.
func (e *Engine) Answer(ctx context.Context, a store.Answer) (*store.Call, error) {
	a.SendAfter = e.cfg.RequestTimeout + directMargin
	call, d, err := e.store.AnswerChecked(ctx, a)
	if err != nil {
		return nil, err
	}
	e.sendNow(d)
	return call, nil
}

// StartCall stores a new call and sends its first request at once from
// this instance, as Answer sends a retry. A tool call a rule of its
// server's approvals applies to is stored waiting for people's go-ahead
// instead (approval_required), and nothing goes to the server.
func (e *Engine) StartCall(ctx context.Context, nc store.NewCall) (*store.Call, error) {
	approval, err := e.approvalFor(ctx, nc)
	if err != nil {
		return nil, err
	}
	nc.Approval = approval
	call, d, err := e.store.CreateCallDirect(ctx, nc, e.cfg.RequestTimeout+directMargin)
	if err != nil {
		return nil, err
	}
	e.sendNow(d)
	return call, nil
}

// The first road, sent directly: a round's request is sent by the instance
// that committed its answer (or the call), at once, on a bounded set of
// goroutines: its River job is inserted in the same transaction but
// scheduled for later, as a safety net, and the outcome's transaction
// removes it (see store.Direct). The request then costs no fetch, read or
// completion of a job, and waits for no worker to be told.

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

// sendNow sends d's request on one of the engine's direct senders; with
// none free, or while the engine stops, the job is made due for River.
func (e *Engine) sendNow(d *store.Direct) {
	if d == nil {
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
	c := d.Attempt.Call
	err := e.attempt(ctx, queue.Job{ID: d.Job, Direct: true}, d.Attempt, c.CurrentSeq)
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

// The second road, River's job: requestWorker runs River's request jobs,
// and the third, the hand-over to another instance, branches off it
// (request, handOver).
type requestWorker struct {
	river.WorkerDefaults[queue.RequestArgs]
	e *Engine
}

// Timeout is River's timeout for a job, which is also how long River's
// rescuer leaves a silent job alone. It stays short so an orphan is picked
// up within a minute. A job holding a handshake-era session runs longer:
// it tells River it is alive every few seconds (see held.go) and is bounded
// by its own deadlines instead.
func (w *requestWorker) Timeout(*river.Job[queue.RequestArgs]) time.Duration {
	return w.e.cfg.RequestTimeout
}

func (w *requestWorker) Work(ctx context.Context, job *river.Job[queue.RequestArgs]) error {
	// The job completes in the transaction that stores the request's
	// outcome: one commit, and no window in which the outcome is stored
	// but the job would run again.
	err := w.e.request(ctx, queue.Job{ID: job.ID, Attempt: job.Attempt}, job.Args.CallID, job.Args.Seq)
	var snooze *river.JobSnoozeError
	if err != nil && job.Attempt >= job.MaxAttempts && !errors.As(err, &snooze) {
		// Last attempt: say so on the call rather than leave it running.
		msg := "The request could not be completed; you can retry." + mcpclient.DetailSeparator + err.Error()
		if ferr := w.e.store.FailCall(context.WithoutCancel(ctx), job.Args.CallID, job.Args.Seq, msg, true); ferr != nil {
			w.e.log.ErrorContext(ctx, "failing call after last attempt", "call_id", job.Args.CallID, "err", ferr)
		}
	}
	return err
}

// request sends the request of round seq (0 for the first) and stores what
// came back. Errors returned are the store's: River retries them.
func (e *Engine) request(ctx context.Context, job queue.Job, callID string, seq int) error {
	log := e.log.With("call_id", callID, "seq", seq)
	if job.Attempt > 1 {
		c, err := e.store.Call(ctx, callID)
		if err != nil {
			return err
		}
		if c.Handshake && !c.Finished() {
			// The session this call was asked on died with its instance.
			return e.orphaned(ctx, c)
		}
	}
	if moved, err := e.handOver(ctx, job, callID, seq); moved || err != nil {
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
	return e.attempt(ctx, job, a, seq)
}

// attempt sends the request of round seq that a loaded, and stores what
// came back, with job's end: in River's job, or sent directly by the
// instance that committed it (job.Direct).
func (e *Engine) attempt(ctx context.Context, job queue.Job, a *store.Attempt, seq int) error {
	callID, log := a.Call.ID, e.log.With("call_id", a.Call.ID, "seq", seq)
	direct := job.Direct
	localName, local := a.Call.Server().Local()
	if direct && local {
		// A local server's request may belong to another instance's
		// process, or wait for a free one: River's job hands it over.
		return errToRiver
	}
	if a.Round != nil && a.Round.Task {
		// A task's question: its answers go to the task, not in a retry.
		return e.answerTask(ctx, job, a, seq)
	}
	srv, req, answers, err := e.prepare(a)
	if err != nil {
		return e.store.FailCall(ctx, callID, seq, "The call failed: "+err.Error(), false)
	}
	if err := e.taskSlot(ctx, job, a, srv, seq); errors.Is(err, errMovedOn) {
		log.InfoContext(ctx, "call moved on before its request was sent")
		return nil
	} else if err != nil {
		return err
	}
	token, renewable, err := e.renewDue(ctx, a.Token, a.Call.ServerID, a.Call.Owner, "")
	if err != nil {
		return err
	}
	srv.Token = token
	if err := e.waitForProcess(ctx, localName, srv.Protocol, callID, seq); err != nil {
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
	defer e.release(job.ID)
	// A request from a held round (a person started a call again whose
	// session ended) opens a new session: its questions begin a new asking.
	s := &session{seq: seq, afresh: a.Round != nil && a.Round.HeldBy != nil}
	srv.Held = e.held(context.WithoutCancel(ctx), job.ID, a.Call, s, cancel)
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
	if local && errors.Is(sent.err, mcpclient.ErrProcessesBusy) {
		// Another call took the last process first: wait for a turn.
		return e.processesBusy(ctx, localName, callID, seq)
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
	err = e.record(ctx, job, a, seq, held, answers, sent)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		// Someone else finished this request meanwhile (a rescued
		// duplicate), or the call was deleted.
		return nil
	}
	return err
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
	srv, err := e.store.MCPServer(c.Server(), e.cfg.Capabilities)
	if err != nil {
		return mcpclient.Server{}, req, nil, err
	}
	srv.Roots = mcpRoots(c.ServerRootsList)
	if c.Protocol != nil && *c.Protocol != "" && *c.Protocol != mcpclient.ProtocolAuto {
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
func (e *Engine) record(ctx context.Context, job queue.Job, a *store.Attempt, seq int, held bool, answers *mcpclient.Answers, r sent) error {
	c, out, err := a.Call, r.out, r.err
	log := e.log.With("call_id", c.ID, "seq", seq, "duration", time.Since(r.start).Round(time.Millisecond))
	asking, position := a.NextPlace()
	o := store.Outcome{Attempt: e.observe(c, seq, position, r.start, out, err), Job: job}
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
		log.InfoContext(ctx, "the server no longer knows the round's state", "age", e.cfg.Now().Sub(a.Round.CreatedAt).Round(time.Second))
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
		if se := serverError(err); se != nil {
			return e.store.FailCallAnswered(ctx, c.ID, seq, msg, retryable, se, o)
		}
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
	asks := roundAsks(c, r.Questions)
	next := store.NewRound{
		InputRequests: r.InputRequests,
		RequestState:  r.RequestState,
		ExpiresAt:     e.cfg.Now().Add(ttl),
		Responses:     autoAnswersUnlessAgent(r.Questions, c.ServerRootsList, asks),
		Instance:      e.cfg.InstanceID,
		Asking:        asking,
		Position:      position,
		Process:       r.Process,
		Asks:          asks,
	}
	if before := answeredBefore(a, r); before != nil {
		log.InfoContext(ctx, "the same questions as before the server was asked afresh: answered again", "from_seq", before.Seq)
		next.Responses, next.Again = before.Responses, before
		e.cfg.Metrics.AnsweredAgain(c.ServerName)
	}
	return e.store.AddRound(ctx, c.ID, seq, next, o)
}

// roundAsks is whom a round of call c asking qs asks besides the call's
// assignee, for an agent's call (see store.RoundAsks); nil for any other.
func roundAsks(c *store.Call, qs []mcpclient.Question) *string {
	if c.Agent == nil {
		return nil
	}
	kinds := make([]string, len(qs))
	for i, q := range qs {
		kinds[i] = q.Kind
	}
	assignee := c.Owner
	if c.Assignee != nil {
		assignee = *c.Assignee
	}
	return store.RoundAsks(c.ServerAgentQuestions, c.Agent, c.Owner, assignee, kinds)
}
