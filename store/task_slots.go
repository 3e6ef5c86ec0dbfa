package store

import (
	"context"
	"encoding/json"
	"github.com/mcp-rounds/rounds/queue"
	"time"
)

// A server runs at most its max_tasks tasks at once (DefaultMaxTasks when
// unset). A call holds a place among them while its task is under way, and
// while its request is on its way to a server that runs tasks, since the
// answer may be one. A call that finds no place is not sent: it waits in
// line, its job put off, and the call that gives its place up wakes the
// first in line (the trigger of migration 00073). Places are taken one at
// a time per server, under a lock, so the count holds across instances.

// DefaultMaxTasks is how many tasks a server runs at once unless its
// servers file entry or its admin page says otherwise.
const DefaultMaxTasks = 100

// taskHolds is true of a call that holds a place among its server's
// tasks; calls_task_slots_idx answers it.
const taskHolds = `status in ('queued', 'running', 'input_required') and (task_id is not null or task_slot = current_seq)`

// taskWaits is true of a call waiting for a place; calls_task_waiting_idx
// answers it.
const taskWaits = `task_wait_since is not null and status in ('queued', 'running')`

// taskSlotLock is the first key of the advisory lock under which a
// server's places are taken, and given up (the trigger of migration
// 00073); the server's id is the second.
const taskSlotLock = 7302

// TaskWait is a call put in line for a place among its server's tasks:
// what its page says meanwhile, and its request's job, put off by After
// (or until the first in line is woken) in the same transaction.
type TaskWait struct {
	Message string
	After   time.Duration
	// Job is the request's job (none when zero).
	Job queue.Job
}

// TaskSlot takes a place among the tasks of the call's server for request
// seq, when fewer than most calls hold one or wait ahead of it, and reports
// whether it did. A call that finds none is put in line as w says. Its job
// is put off in the same transaction, so that the call giving a place up
// next finds it waiting. A call that moved on is ErrConflict.
func (s *Store) TaskSlot(ctx context.Context, callID string, seq, most int, w TaskWait) (bool, error) {
	note, err := json.Marshal(Progress{Seq: seq, Message: w.Message, Waiting: true})
	if err != nil {
		return false, err
	}
	var took bool
	err = s.announcedTx(ctx, func(tx *txn) error {
		// A statement of its own: the count that follows sees every place
		// taken before the lock was.
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($2, (server_id % 2147483648)::int) from calls where id = $1`,
			callID, taskSlotLock); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `update calls c set task_slot = $2, task_wait_since = null,
			       progress = case when c.task_wait_since is null then c.progress end
			where c.id = $1 and c.current_seq = $2 and c.status in ('queued', 'running')
			  and (select count(*) from calls h where h.server_id = c.server_id and h.id <> c.id and h.`+taskHolds+`)
			    + (select count(*) from calls w where w.server_id = c.server_id and w.id <> c.id and w.`+taskWaits+`
			       and (w.task_wait_since, w.id) < (coalesce(c.task_wait_since, 'infinity'), c.id)) < $3`,
			callID, seq, most)
		if err != nil {
			return err
		}
		if took = tag.RowsAffected() > 0; took {
			return nil
		}
		tag, err = tx.Exec(ctx, `update calls set task_wait_since = coalesce(task_wait_since, now()), progress = $3
			where id = $1 and current_seq = $2 and status in ('queued', 'running')`, callID, seq, note)
		switch {
		case err != nil:
			return err
		case tag.RowsAffected() == 0:
			return conflict("call %s is not waiting for request %d", callID, seq)
		case w.Job.ID != 0:
			_, err = queue.PutOffWaiting(w.Job, w.After).Exec(ctx, tx)
		}
		return err
	})
	return took, translate(err, "call")
}

// WakeTaskWaiters makes due the waiting requests of every server with a
// place free, as many as it has free, first in line first: a wake the
// trigger missed (a call that ended while its turn came, a limit raised)
// is made up for. It returns how many it woke.
func (s *Store) WakeTaskWaiters(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		with line as (
			select w.id, w.server_id, row_number() over (partition by w.server_id order by w.task_wait_since, w.id) as place
			from calls w where w.`+taskWaits+`),
		free as materialized (
			select s.id as server_id, coalesce(s.max_tasks, $1) - (select count(*) from calls h
				where h.server_id = s.id and h.`+taskHolds+`) as free
			from servers s where s.id in (select server_id from line)),
		woken as (
			select l.id from line l join free f on f.server_id = l.server_id and l.place <= f.free)
		`+queue.WakeRequests("woken"), DefaultMaxTasks)
	return tag.RowsAffected(), err
}

// SetServerMaxTasks sets how many tasks a server runs at once; zero for
// DefaultMaxTasks.
func (s *Store) SetServerMaxTasks(ctx context.Context, name string, most int) error {
	s.forgetServers() // see ServerToCall
	var n *int
	if most > 0 {
		n = &most
	}
	return s.execOne(ctx, "server "+name,
		`update servers set max_tasks = $2, updated_at = now() where name = $1`, name, n)
}

// ServerTaskLoad is how many of a server's calls hold a place among its
// tasks, and how many wait for one.
func (s *Store) ServerTaskLoad(ctx context.Context, serverID int64) (holding, waiting int, err error) {
	err = s.pool.QueryRow(ctx, `select
		(select count(*) from calls where server_id = $1 and `+taskHolds+`),
		(select count(*) from calls where server_id = $1 and `+taskWaits+`)`, serverID).Scan(&holding, &waiting)
	return holding, waiting, err
}
