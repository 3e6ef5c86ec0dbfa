package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcp-rounds/rounds/queue"
)

// A call the server runs as a task (the io.modelcontextprotocol/tasks
// extension) keeps the task's id and state on the call. One poll job per
// task asks the server where it stands, on any instance, at the server's
// pace; the task's questions become rounds like any other, and answering
// one sends tasks/update through the call's request job.

// TaskState is what Rounds keeps of a task as last polled.
type TaskState struct {
	ID      string
	Status  string
	Message string
	// Poll is how often the server asks to be polled; zero when unsaid.
	Poll time.Duration
	// ExpiresAt is when the server may forget the task; nil for never.
	// Postgres keeps microseconds, so it is compared to the microsecond: a
	// server's nanoseconds would read as a change on every poll.
	ExpiresAt *time.Time
}

func (t TaskState) pollMs() *int {
	if t.Poll <= 0 {
		return nil
	}
	return new(int(t.Poll / time.Millisecond))
}

// taskProgress is the call's progress as a task says it: its status
// message, for the call's current request, with no measure.
const taskProgress = `case when $5::text = '' then progress
	else jsonb_build_object('seq', current_seq, 'progress', 0, 'message', $5::text, 'task', true) end`

// StartTask records that the server answered request seq with a task: the
// call runs on, its server is known to run tasks from now on (see
// TaskSlot), and its poll job is enqueued for firstPoll, in the outcome's
// transaction.
func (s *Store) StartTask(ctx context.Context, callID string, seq int, t TaskState, firstPoll time.Time, instance string, with ...Outcome) error {
	return s.announcedTx(ctx, func(tx *txn) error {
		b := &pgx.Batch{}
		b.Queue(`update calls set status = 'running', task_id = $3, task_status = $4, progress = `+taskProgress+`,
			       task_poll_ms = $6, task_expires_at = $7, task_keys = '{}', task_stopped_at = null,
			       task_started_at = now(), error = null, retryable = false, updated_at = now()
			where id = $1 and current_seq = $2 and status in ('queued', 'running')`,
			callID, seq, t.ID, t.Status, t.Message, t.pollMs(), t.ExpiresAt).
			Exec(func(ct pgconn.CommandTag) error {
				if ct.RowsAffected() == 0 {
					return conflict("call %s moved on before request %d finished", callID, seq)
				}
				return nil
			})
		b.Queue(`update servers set runs_tasks = true
			where id = (select server_id from calls where id = $1) and not runs_tasks`, callID)
		firstOutcome(with).queue(b)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if err := auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "system", Action: "call.task_started",
			Target: callID, Detail: map[string]any{"seq": seq}}); err != nil {
			return err
		}
		return s.enqueueJobs(ctx, tx, queue.Insert{Args: queue.TaskArgs{CallID: callID}, At: firstPoll})
	})
}

// TaskPolled keeps what a poll said of a task still under way. It writes
// only when something changed: most polls of a long task say the same,
// and each write is a row version and a notification.
func (s *Store) TaskPolled(ctx context.Context, c *Call, t TaskState) error {
	if !taskChanged(c, t) {
		return nil
	}
	_, err := s.pool.Exec(ctx, `update calls set task_status = $2, task_poll_ms = $3, task_expires_at = $4,
		progress = `+taskProgress+`
		where id = $1 and task_id is not null`, c.ID, t.Status, t.pollMs(), t.ExpiresAt, t.Message)
	return err
}

// taskChanged says whether a poll's task differs from what the call
// keeps of it. No status message changes none: the last one is kept.
func taskChanged(c *Call, t TaskState) bool {
	return c.TaskStatus == nil || *c.TaskStatus != t.Status || !sameMs(c.TaskPollMs, t.pollMs()) ||
		!sameTime(c.TaskExpiresAt, t.ExpiresAt) || (t.Message != "" && t.Message != taskMessage(c))
}

// taskMessage is the status message last kept for the call's task, at its
// current request, whether or not a question of the task waits now.
func taskMessage(c *Call) string {
	var p Progress
	if c.Progress == nil || json.Unmarshal(c.Progress, &p) != nil || !p.Task || p.Seq != c.CurrentSeq {
		return ""
	}
	return p.Message
}

// TaskAnswered records that the server took the answers of round seq
// (tasks/update): the call runs again, and its task is polled at once to
// see what the answers changed.
func (s *Store) TaskAnswered(ctx context.Context, callID string, seq int, with ...Outcome) error {
	return s.announcedTx(ctx, func(tx *txn) error {
		b := &pgx.Batch{}
		b.Queue(`update calls set status = 'running', updated_at = now()
			where id = $1 and current_seq = $2 and status in ('queued', 'running')`, callID, seq).
			Exec(func(ct pgconn.CommandTag) error {
				if ct.RowsAffected() == 0 {
					return conflict("call %s moved on before request %d finished", callID, seq)
				}
				return nil
			})
		queue.PollNow(callID).Queue(b)
		firstOutcome(with).queue(b)
		queueNotes(tx, b)
		return tx.SendBatch(ctx, b).Close()
	})
}

// PollTaskNow brings the call's task's next poll forward to now.
func (s *Store) PollTaskNow(ctx context.Context, callID string) error {
	_, err := queue.PollNow(callID).Exec(ctx, s.pool)
	return err
}

// TaskEnd is how a task ended, as the server said it.
type TaskEnd struct {
	// Status is the call's end: CallComplete, CallFailed or CallCancelled.
	Status string
	Result []byte
	// Message says why a failed or cancelled call ended.
	Message string
	// ServerError is the JSON-RPC error a failed task carried (see
	// Outcome.ServerError).
	ServerError json.RawMessage
}

// EndTask ends a call with its task: whatever the call was doing (running,
// or waiting on one of the task's questions, whose round is then closed).
// A call a person stopped whose task completed all the same takes the
// result: the server did the work. It is ErrConflict when the call already
// ended otherwise.
func (s *Store) EndTask(ctx context.Context, callID string, end TaskEnd) error {
	return s.announcedTx(ctx, func(tx *txn) error {
		var webhook bool
		var seq int
		err := tx.QueryRow(ctx, `update calls set status = $2, result = $3, error = $4, retryable = false, server_error = $5,
			       task_status = case $2 when 'complete' then 'completed' when 'failed' then 'failed' else 'cancelled' end,
			       updated_at = now(), finished_at = now()
			where id = $1 and task_id is not null
			  and (status in ('queued', 'running', 'input_required')
			       or (status = 'cancelled' and task_stopped_at is not null and $2 = 'complete'))
			returning webhook_url is not null, current_seq`,
			callID, end.Status, end.Result, nullIfEmpty(clean(end.Message, 16<<10)), end.ServerError).Scan(&webhook, &seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return conflict("call %s already ended", callID)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update rounds set status = 'cancelled'
			where call_id = $1 and seq = $2 and status = 'pending'`, callID, seq); err != nil {
			return err
		}
		if !webhook {
			return nil
		}
		return s.callFinishedTx(ctx, tx, callID)
	})
}

// TaskStopSent records that the server was asked to stop the call's task.
func (s *Store) TaskStopSent(ctx context.Context, callID string) error {
	_, err := s.pool.Exec(ctx, `update calls set task_stopped_at = coalesce(task_stopped_at, now())
		where id = $1 and task_id is not null`, callID)
	return err
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func sameMs(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}
