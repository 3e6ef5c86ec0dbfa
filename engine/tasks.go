package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// Tasks (the io.modelcontextprotocol/tasks extension). A server may answer
// a tool call with a task: the call runs on, and one poll job per task
// asks the server where it stands (tasks/get) at the pace it asks for, on
// any instance, across restarts, snoozing between polls. A task's
// questions become rounds like any other; answering one sends tasks/update
// through the call's request job (answerTask), which brings the poll
// forward. Stop sends tasks/cancel, and the poll goes on a while, slowly,
// to keep a result that came all the same.
//
// Tasks must not starve other jobs, however many a server starts and
// however slowly it answers: polls run in a queue of their own
// (TaskWorkers), a server runs at most its own number of tasks at once
// (a call beyond waits unsent; see store.TaskSlot), a task the server gave
// no lifetime is followed at most TaskMaxLifetime, a stopped one is polled
// only every TaskWaitPoll, and a poll that learnt nothing new writes
// nothing to the call.

// Bounds on the pace of polls, whatever the server asks: never more often
// than minTaskPoll, never less often than maxTaskPoll; defaultTaskPoll
// when the server does not say.
const (
	minTaskPoll     = 100 * time.Millisecond
	defaultTaskPoll = 2 * time.Second
	maxTaskPoll     = 10 * time.Minute
)

// maxTaskRounds caps the rounds of a call that became a task: a task may
// ask for days, but not without end.
const maxTaskRounds = 100

// stoppedTaskWatch is how long a stopped task is still polled for a result
// that comes all the same.
const stoppedTaskWatch = time.Hour

// startTask stores the task a request came back with, and its first poll.
func (e *Engine) startTask(ctx context.Context, log *slog.Logger, a *store.Attempt, seq int, t *mcpclient.Task, o store.Outcome) error {
	log.InfoContext(ctx, "the server runs the call as a task", "status", t.Status)
	first := time.Now().Add(e.taskPace(t, false))
	if t.Status != mcpclient.TaskWorking {
		first = time.Now() // it already has something to say
	}
	return e.store.StartTask(ctx, a.Call.ID, seq, taskState(t), first, e.cfg.InstanceID, o)
}

// taskPace is how long to wait before the next poll: what the server
// asked, within bounds, and no less than TaskWaitPoll while a person is
// being asked.
func (e *Engine) taskPace(t *mcpclient.Task, waiting bool) time.Duration {
	d := t.PollInterval
	if d <= 0 {
		d = defaultTaskPoll
	}
	d = min(max(d, minTaskPoll), maxTaskPoll)
	if waiting {
		d = max(d, e.cfg.TaskWaitPoll)
	}
	return d
}

func taskState(t *mcpclient.Task) store.TaskState {
	ts := store.TaskState{ID: t.ID, Status: t.Status, Message: t.Message, Poll: t.PollInterval}
	if at, ok := t.Deadline(); ok {
		ts.ExpiresAt = &at
	}
	return ts
}

// taskServer is the server a call's task is asked at, with the owner's
// connection there.
func (e *Engine) taskServer(ctx context.Context, c *store.Call) (mcpclient.Server, error) {
	srv, err := e.store.MCPServer(c.Server(), e.cfg.Capabilities)
	if err != nil {
		return mcpclient.Server{}, err
	}
	srv.Protocol = mcpclient.ProtocolStateless
	if srv.Token, _, err = e.accessToken(ctx, c.ServerID, c.Owner, ""); err != nil {
		return srv, err
	}
	return srv, nil
}

type taskWorker struct {
	river.WorkerDefaults[queue.TaskArgs]
	e *Engine
}

// Timeout is a request's: a poll is one request, and a poll orphaned by
// a dead instance is rescued within a minute, as a request is.
func (w *taskWorker) Timeout(*river.Job[queue.TaskArgs]) time.Duration {
	return w.e.cfg.RequestTimeout
}

// NextRetry backs off a poll that failed: 2 s, 4 s, … up to five minutes.
func (w *taskWorker) NextRetry(job *river.Job[queue.TaskArgs]) time.Time {
	return time.Now().Add(min(time.Second<<min(job.Attempt, 9), 5*time.Minute))
}

func (w *taskWorker) Work(ctx context.Context, job *river.Job[queue.TaskArgs]) error {
	err := w.e.pollTask(ctx, job.Args.CallID)
	var snooze *river.JobSnoozeError
	if err != nil && !errors.As(err, &snooze) && job.Attempt >= job.MaxAttempts {
		// The server stayed out of reach: say so rather than poll for ever.
		msg, _ := describe(err)
		end := store.TaskEnd{Status: store.CallFailed, Message: "Rounds could not ask the server how the task goes, " +
			fmt.Sprint(job.Attempt) + " times in a row, and stopped asking. " + msg}
		if ferr := w.e.store.EndTask(context.WithoutCancel(ctx), job.Args.CallID, end); ferr != nil && !errors.Is(ferr, store.ErrConflict) {
			w.e.log.ErrorContext(ctx, "failing a task's call after its last poll", "call_id", job.Args.CallID, "err", ferr)
		}
	}
	return err
}

// pollTask asks the server where the call's task stands, keeps what it
// says, and snoozes until the next poll; it returns nil once the task, or
// the watch over it, has ended.
func (e *Engine) pollTask(ctx context.Context, callID string) error {
	log := e.log.With("call_id", callID)
	c, err := e.store.Call(ctx, callID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.TaskID == nil {
		return nil
	}
	if c.Finished() && !stillWatched(c) {
		if c.Status == store.CallExpired && c.TaskStoppedAt == nil {
			// Nobody answered its question in time: the task need not
			// wait for it any longer.
			e.cancelTask(ctx, log, c)
		}
		return nil
	}
	srv, err := e.taskServer(ctx, c)
	if err != nil {
		return err
	}
	if !c.Finished() && e.outlived(c) {
		return e.endOutlived(ctx, log, c, srv)
	}
	t, err := e.mcp.GetTask(ctx, srv, *c.TaskID)
	// What the poll learnt is stored even when the request took all of
	// the job's time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err != nil {
		if mcpclient.TaskGone(err) {
			log.InfoContext(ctx, "the server no longer knows the task", "err", err)
			msg, _ := describe(err)
			return e.endTask(ctx, c, store.TaskEnd{Status: store.CallFailed,
				Message: "The server no longer knows this task: it expired, or was deleted. " + msg})
		}
		log.WarnContext(ctx, "polling a task", "err", err)
		return err
	}
	switch t.Status {
	case mcpclient.TaskCompleted:
		log.InfoContext(ctx, "task completed")
		return e.endTask(ctx, c, store.TaskEnd{Status: store.CallComplete, Result: t.Result})
	case mcpclient.TaskFailed:
		log.InfoContext(ctx, "task failed", "code", t.Error.Code)
		msg := "The task failed on the server: " + sentenceOf(t.Error.Message)
		if t.Message != "" && t.Message != t.Error.Message {
			msg += " It said: " + sentenceOf(t.Message)
		}
		return e.endTask(ctx, c, store.TaskEnd{Status: store.CallFailed, Message: msg, ServerError: serverError(t.Error)})
	case mcpclient.TaskCancelled:
		log.InfoContext(ctx, "task cancelled")
		msg := "The server cancelled the task."
		if t.Message != "" {
			msg += " It said: " + sentenceOf(t.Message)
		}
		return e.endTask(ctx, c, store.TaskEnd{Status: store.CallCancelled, Message: msg})
	}
	if c.Finished() {
		// Stopped, and the server still says it works: look again, as
		// seldom as while a person is asked. Only a result that comes all
		// the same matters now.
		return river.JobSnooze(e.taskPace(t, true))
	}
	if err := e.store.TaskPolled(ctx, c, taskState(t)); err != nil {
		return err
	}
	waiting := c.Status == store.CallInputRequired
	if t.Status == mcpclient.TaskInputRequired && c.Status == store.CallRunning {
		// (A queued call's answers are on their way to the server.)
		asked, err := e.taskAsked(ctx, log, c, t)
		if err != nil {
			return err
		}
		waiting = asked
	}
	return river.JobSnooze(e.nextPoll(c, t, waiting))
}

// outlived says whether a task the server gave no lifetime (ttlMs) has
// been followed for TaskMaxLifetime.
func (e *Engine) outlived(c *store.Call) bool {
	return c.TaskExpiresAt == nil && c.TaskStartedAt != nil && time.Since(*c.TaskStartedAt) >= e.cfg.TaskMaxLifetime
}

// endOutlived fails the call of a task that outlived TaskMaxLifetime, and
// asks the server to stop it; whether it does no longer matters.
func (e *Engine) endOutlived(ctx context.Context, log *slog.Logger, c *store.Call, srv mcpclient.Server) error {
	log.InfoContext(ctx, "a task without a lifetime of its own ran too long", "started", c.TaskStartedAt)
	if err := e.mcp.CancelTask(ctx, srv, *c.TaskID); err != nil {
		log.InfoContext(ctx, "asking the server to stop a task that ran too long", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	return e.endTask(ctx, c, store.TaskEnd{Status: store.CallFailed, Message: "Rounds follows a task its server gives no " +
		"lifetime of its own for " + HumanDuration(e.cfg.TaskMaxLifetime) + " at most. This one ran that long, so Rounds " +
		"stopped following it and asked the server to stop it."})
}

// nextPoll is how long to wait before the next poll of a task still under
// way: its pace, and no later than the end of its lifetime.
func (e *Engine) nextPoll(c *store.Call, t *mcpclient.Task, waiting bool) time.Duration {
	d := e.taskPace(t, waiting)
	if _, ok := t.Deadline(); !ok && c.TaskStartedAt != nil {
		d = min(d, max(time.Until(c.TaskStartedAt.Add(e.cfg.TaskMaxLifetime)), minTaskPoll))
	}
	return d
}

// stillWatched says whether a stopped call's task is still polled, for a
// result that comes all the same.
func stillWatched(c *store.Call) bool {
	return c.Status == store.CallCancelled && c.TaskStoppedAt != nil && time.Since(*c.TaskStoppedAt) < stoppedTaskWatch &&
		(c.TaskExpiresAt == nil || time.Now().Before(*c.TaskExpiresAt))
}

// endTask ends the call with its task; a call that ended meanwhile is left
// as it is.
func (e *Engine) endTask(ctx context.Context, c *store.Call, end store.TaskEnd) error {
	err := e.store.EndTask(ctx, c.ID, end)
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	return err
}

// taskAsked makes a round of the questions a task asks that it never asked
// before: a key the server sends again on later polls while it waits is
// the same question. It reports whether a round now waits.
func (e *Engine) taskAsked(ctx context.Context, log *slog.Logger, c *store.Call, t *mcpclient.Task) (bool, error) {
	seen := map[string]bool{}
	for _, k := range c.TaskKeys {
		seen[k] = true
	}
	var fresh []mcpclient.Question
	for _, q := range t.Questions {
		if !seen[q.Key] {
			fresh = append(fresh, q)
		}
	}
	if len(fresh) == 0 {
		// Answered already: the server has not caught up yet.
		return false, nil
	}
	raw := t.InputRequests
	if len(fresh) < len(t.Questions) {
		// Only what was not asked before, byte for byte, in order.
		var err error
		if raw, err = subset(t.InputRequests, fresh); err != nil {
			return false, err
		}
	}
	if c.CurrentSeq >= maxTaskRounds {
		return false, e.endTask(ctx, c, store.TaskEnd{Status: store.CallFailed,
			Message: fmt.Sprintf("The call asked more than %d rounds of questions; Rounds stopped following its task.", maxTaskRounds)})
	}
	// The server's own lifetime for rounds, when an operator set one, as
	// for any other round.
	expires := time.Now().Add(e.roundTTL(ctx, c.ServerID))
	if c.TaskExpiresAt != nil && c.TaskExpiresAt.Before(expires) {
		// The server forgets the task then: the question cannot outlive it.
		expires = *c.TaskExpiresAt
	}
	keys := make([]string, len(fresh))
	for i, q := range fresh {
		keys[i] = q.Key
	}
	log.InfoContext(ctx, "the task asks", "questions", len(fresh))
	asks := roundAsks(c, fresh)
	next := store.NewRound{InputRequests: raw, ExpiresAt: expires, Task: true, Keys: keys,
		Responses: autoAnswersUnlessAgent(fresh, c.ServerRootsList, asks), Instance: e.cfg.InstanceID,
		Position: c.CurrentSeq + 1, Asks: asks}
	err := e.store.AddRound(ctx, c.ID, c.CurrentSeq, next)
	if errors.Is(err, store.ErrConflict) {
		return false, nil // moved on meanwhile: the next poll sees
	}
	return next.Responses == nil, err
}

// subset is the inputRequests object with only the questions given, each
// byte for byte as the server sent it.
func subset(all json.RawMessage, qs []mcpclient.Question) (json.RawMessage, error) {
	var byKey map[string]json.RawMessage
	if err := json.Unmarshal(all, &byKey); err != nil {
		return nil, err
	}
	out := []byte{'{'}
	for i, q := range qs {
		if i > 0 {
			out = append(out, ',')
		}
		k, err := mcpclient.MarshalRaw(q.Key)
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, k...), ':'), byKey[q.Key]...)
	}
	return append(out, '}'), nil
}

// answerTask sends a task round's answers to the server (tasks/update)
// from the call's request job. The server takes them and the task goes on;
// the poll, brought forward, sees what they changed.
func (e *Engine) answerTask(ctx context.Context, job queue.Job, a *store.Attempt, seq int) error {
	c := a.Call
	log := e.log.With("call_id", c.ID, "seq", seq)
	srv, err := e.taskServer(ctx, c)
	if err != nil {
		return err
	}
	start := time.Now()
	err = e.mcp.UpdateTask(ctx, srv, *c.TaskID, a.Round.Responses)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	rec := &store.AttemptRecord{CallID: c.ID, Seq: seq, Instance: e.cfg.InstanceID, StartedAt: start,
		DurationMs: int(time.Since(start).Milliseconds()), Outcome: store.AttemptResult}
	if err != nil {
		rec.Outcome = store.AttemptError
		rec.Error = new(err.Error())
	}
	o := store.Outcome{Attempt: rec, Job: job}
	switch {
	case err == nil:
		log.InfoContext(ctx, "the task took the answers")
		if err := e.store.TaskAnswered(ctx, c.ID, seq, o); err != nil {
			return err
		}
		e.pollAgainSoon(c.ID)
		return nil
	case mcpclient.TaskGone(err):
		msg, _ := describe(err)
		return e.store.FailCall(ctx, c.ID, seq, "The server no longer knows this task: it expired, or was deleted, "+
			"before it took the answers. "+msg, false, o)
	default:
		if wait, ok := mcpclient.Transient(err); ok {
			if snooze, ok := e.retryLater(ctx, c, seq, err, wait); ok {
				if rerr := e.store.RecordAttempt(ctx, *o.Attempt); rerr != nil {
					log.WarnContext(ctx, "recording an attempt", "err", rerr)
				}
				return snooze
			}
		}
		log.WarnContext(ctx, "giving a task its answers", "err", err)
		msg, retryable := describe(err)
		return e.store.FailCall(ctx, c.ID, seq, msg, retryable, o)
	}
}

type taskCancelWorker struct {
	river.WorkerDefaults[queue.TaskCancelArgs]
	e *Engine
}

func (w *taskCancelWorker) Work(ctx context.Context, job *river.Job[queue.TaskCancelArgs]) error {
	c, err := w.e.store.Call(ctx, job.Args.CallID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return w.e.cancelTask(ctx, w.e.log.With("call_id", c.ID), c)
}

// cancelTask asks the server to stop the call's task (tasks/cancel); the
// server need not, and its poll keeps a result that comes all the same.
func (e *Engine) cancelTask(ctx context.Context, log *slog.Logger, c *store.Call) error {
	if c.TaskID == nil {
		return nil
	}
	srv, err := e.taskServer(ctx, c)
	if err != nil {
		return err
	}
	err = e.mcp.CancelTask(ctx, srv, *c.TaskID)
	switch {
	case err == nil:
		log.InfoContext(ctx, "asked the server to stop the task")
	case mcpclient.TaskGone(err):
		log.InfoContext(ctx, "the server no longer knew the task it was asked to stop", "err", err)
	default:
		log.WarnContext(ctx, "asking the server to stop a task", "err", err)
		return err
	}
	if err := e.store.TaskStopSent(ctx, c.ID); err != nil {
		return err
	}
	// Bring the poll forward: a task that stops says so on its next poll.
	return e.store.PollTaskNow(ctx, c.ID)
}

// pollAgainSoon brings the task's poll forward once more a moment after
// its answers went: TaskAnswered brings forward only a poll already put
// off, and the poll that stored the round may still be finishing (River
// records its snooze after the round's commit). An answer that quick (an
// agent's) would otherwise wait for the slow pace of a task asking a
// person (TaskWaitPoll).
func (e *Engine) pollAgainSoon(callID string) {
	time.AfterFunc(pollAgainAfter, func() {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if err := e.store.PollTaskNow(ctx, callID); err != nil {
			e.log.WarnContext(ctx, "bringing a task's poll forward", "call_id", callID, "err", err)
		}
	})
}

// pollAgainAfter is how long after a task's answers pollAgainSoon acts.
const pollAgainAfter = 2 * time.Second

// sentenceOf is a server's words ended as a sentence.
func sentenceOf(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(nothing)."
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}
