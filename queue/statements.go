package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Stmt is a statement on River's table, with its arguments. The store
// runs it in its own transaction (Exec) or with the others of a batch
// (Queue), so that it costs no round trip of its own.
type Stmt struct {
	SQL  string
	Args []any
}

// Queue adds s to b.
func (s Stmt) Queue(b *pgx.Batch) *pgx.QueuedQuery { return b.Queue(s.SQL, s.Args...) }

// Exec runs s on db: a pool, a connection or a transaction.
func (s Stmt) Exec(ctx context.Context, db DB) (pgconn.CommandTag, error) {
	return db.Exec(ctx, s.SQL, s.Args...)
}

// DB runs a statement: a pool, a connection or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// A request the instance that commits it sends at once, itself, rather
// than through River (the store's Direct, the engine's direct send) still
// has its River job, inserted in the same transaction but scheduled for
// later: the safety net. The outcome's transaction removes it while it is
// still scheduled (Finish); only an instance that dies, or stops, between
// the two leaves it, and River sends the request when the job falls due.

// insertDirectJob inserts the job of a request sent directly, scheduled
// $4 milliseconds from now, when the call waits for request $3: a plain
// insert, where River's own takes a statement and a round trip of its own
// and costs a round a fifth of its Postgres time. The columns left out
// take River's defaults (priority, metadata, tags); RequestArgs has no
// uniqueness to keep.
const insertDirectJob = `
	insert into river_job (args, kind, max_attempts, queue, scheduled_at, state)
	select $1::jsonb, $5, $6, $7, now() + make_interval(secs => $4::float8 / 1000), 'scheduled'
	where exists (select 1 from calls where id = $2 and current_seq = $3 and status = 'queued')
	returning id`

// ScheduleRequest inserts the safety net of request seq of callID, sent
// directly: its job, scheduled after from now, only if the call is
// queued for that request. It returns the job's id, or no row.
func ScheduleRequest(callID string, seq int, after time.Duration) Stmt {
	args, _ := json.Marshal(RequestArgs{CallID: callID, Seq: seq}) // two plain fields
	return Stmt{insertDirectJob, []any{string(args), callID, seq, after.Milliseconds(),
		RequestArgs{}.Kind(), RequestArgs{}.InsertOpts().MaxAttempts, Default}}
}

// MakeDue makes a directly sent request's job due now, while it is still
// scheduled: the request goes River's way. It changes a row only if the
// job was still scheduled.
func MakeDue(job int64) Stmt {
	return Stmt{`update river_job set state = 'available', scheduled_at = now()
			where id = $1 and state = 'scheduled'`, []any{job}}
}

// PutOff moves a directly sent request's job, while still scheduled, to
// at, as River's snooze would.
func PutOff(job int64, at time.Time) Stmt {
	return Stmt{`update river_job set scheduled_at = $2 where id = $1 and state = 'scheduled'`, []any{job, at}}
}

// unscheduleJob removes a directly sent request's job with the request's
// outcome, while River has not taken it: still scheduled, or due but not
// yet fetched. A job River runs (the direct send outlived its delay) is
// left to find the call moved on.
const unscheduleJob = `delete from river_job where id = $1 and state in ('scheduled', 'available')`

// completeJob marks a request's job completed, as River's JobCompleteTx
// does for a job with no metadata to merge. River's own statement, made
// for many jobs and every kind of change, is planned afresh each time it
// runs: under the API's load 0.64 ms of Postgres's time went to planning
// each completion against 0.2 ms to run it, nearly a fifth of all
// Postgres's time (pg_stat_statements). This one is planned once on each
// connection and rides in the outcome's batch. When the job's Work
// returns, River finds it completed and leaves it so. A job rescued and
// running again has a later attempt, which this leaves alone.
const completeJob = `update river_job set state = 'completed', finalized_at = now()
	where id = $1 and attempt = $2 and state = 'running'`

// Finish ends the job a request ran as, in the transaction that stores
// the request's outcome: a direct send's safety net is removed, River's
// job completed. It is false for the zero Job.
func Finish(j Job) (Stmt, bool) {
	switch {
	case j.ID != 0 && j.Direct:
		return Stmt{unscheduleJob, []any{j.ID}}, true
	case j.ID != 0:
		return Stmt{completeJob, []any{j.ID, j.Attempt}}, true
	}
	return Stmt{}, false
}

// KeepAlive tells River's rescuer that a job holding a session is still
// being worked: a held call outlives the time after which River takes a
// running job for orphaned.
func KeepAlive(job int64) Stmt {
	return Stmt{`update river_job set attempted_at = now() where id = $1 and state = 'running'`, []any{job}}
}

// ReclaimLocal moves the request jobs waiting in the queues of instances
// that are gone back to Default, where any instance runs them. gone is the
// SQL condition, on instances i, of an instance that is gone.
func ReclaimLocal(gone string) Stmt {
	return Stmt{`
		update river_job set queue = 'default'
		where kind = 'mcp_request' and queue like 'local\_%' and state in ('available', 'scheduled', 'retryable')
		  and queue not in (select 'local_' || left(encode(sha256(convert_to(i.id, 'UTF8')), 'hex'), 16)
		                    from instances i where not ` + gone + `)`, nil}
}

// PollNow brings the waiting poll of a call's task forward to now.
func PollNow(callID string) Stmt {
	return Stmt{`update river_job set state = 'available', scheduled_at = now()
	where kind = 'task_poll' and args @> jsonb_build_object('call_id', $1::text) and state = 'scheduled'`, []any{callID}}
}

// RunningOn counts the jobs the instance $1 runs now (River's client id
// is the instance id): a column of the instance's heartbeat.
const RunningOn = `(select count(*) from river_job
		         where state = 'running' and attempted_by[cardinality(attempted_by)] = $1)`

// Leads says the instance i leads River's clients now: a column of the
// instances list.
const Leads = `exists (select 1 from river_leader l where l.leader_id = i.id and l.expires_at > now())`

// JobCounts counts the River jobs not yet finished, by kind and state:
// columns kind, state and n.
const JobCounts = `
		select kind, state::text as state, count(*) as n from river_job
		where state in ('available', 'pending', 'scheduled', 'retryable', 'running')
		group by 1, 2`

// RequestOut is true of a queued call c whose request has been sent and
// not yet answered: its River job runs, or the job is still scheduled,
// which is the safety net of a request the instance that committed it
// sends directly (store.Direct), and no retry waits for its time. A
// request sent again after an outage is scheduled too, but its call's
// retry_at is still ahead.
const RequestOut = `exists (select 1 from river_job j where j.kind = 'mcp_request'
	and j.args @> jsonb_build_object('call_id', c.id::text, 'seq', c.current_seq)
	and (j.state = 'running' or (j.state = 'scheduled' and (c.retry_at is null or c.retry_at <= now()))))`

// PutOffWaiting puts a request's job off by after: a running job is snoozed, as
// River would, its attempt not counted (River then finds it no longer
// running and leaves it so); a direct send's scheduled job is moved later.
func PutOffWaiting(job Job, after time.Duration) Stmt {
	if job.Direct {
		return Stmt{`update river_job set scheduled_at = now() + make_interval(secs => $2::float8 / 1000)
		where id = $1 and state = 'scheduled'`, []any{job.ID, after.Milliseconds()}}
	}
	return Stmt{`update river_job set state = 'scheduled', scheduled_at = now() + make_interval(secs => $3::float8 / 1000),
		attempt = greatest(attempt - 1, 0) where id = $1 and attempt = $2 and state = 'running'`,
		[]any{job.ID, job.Attempt, after.Milliseconds()}}
}

// WakeRequests makes due now the scheduled request jobs of the calls whose
// ids the relation woken (a CTE of the statement it ends) has in column id.
func WakeRequests(woken string) string {
	return `update river_job set state = 'available', scheduled_at = now()
		where id in (select j.id from ` + woken + ` l
			join river_job j on j.kind = 'mcp_request' and j.state = 'scheduled'
			 and j.args @> jsonb_build_object('call_id', l.id::text))`
}
