package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// LocalProcess is how a local (stdio) server's process runs on one
// instance, as that instance last said.
type LocalProcess struct {
	Instance  string     `db:"instance"`
	Server    string     `db:"server"`
	Running   bool       `db:"running"`
	Process   *string    `db:"process"`
	PID       *int       `db:"pid"`
	StartedAt *time.Time `db:"started_at"`
	Restarts  int        `db:"restarts"`
	LastExit  *string    `db:"last_exit"`
	Stderr    []string   `db:"stderr"`
	UpdatedAt time.Time  `db:"updated_at"`
	// Shared says the server has a long-lived process (it is not pinned to
	// a handshake-era revision); Sessions are the processes of held calls
	// running now, of at most MaxSessions.
	Shared      bool `db:"shared"`
	Sessions    int  `db:"sessions"`
	MaxSessions int  `db:"max_sessions"`
	// InstanceGone says the instance stopped or went silent: what it said
	// last is no longer so.
	InstanceGone bool `db:"instance_gone"`
}

// SetLocalProcess records how a local server's process runs on an
// instance.
func (s *Store) SetLocalProcess(ctx context.Context, p LocalProcess) error {
	if p.Stderr == nil {
		p.Stderr = []string{}
	}
	_, err := s.pool.Exec(ctx, `
		insert into local_processes (instance, server, running, process, pid, started_at, restarts, last_exit, stderr,
		                             shared, sessions, max_sessions, updated_at)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now())
		on conflict (instance, server) do update
		set running = excluded.running, process = excluded.process, pid = excluded.pid,
		    started_at = excluded.started_at, restarts = excluded.restarts, last_exit = excluded.last_exit,
		    stderr = excluded.stderr, shared = excluded.shared, sessions = excluded.sessions,
		    max_sessions = excluded.max_sessions, updated_at = now()`,
		p.Instance, p.Server, p.Running, p.Process, p.PID, p.StartedAt, p.Restarts, p.LastExit, p.Stderr,
		p.Shared, p.Sessions, p.MaxSessions)
	return err
}

// LocalProcesses lists a local server's processes on the instances seen
// in the last day.
func (s *Store) LocalProcesses(ctx context.Context, server string) ([]LocalProcess, error) {
	rows, _ := s.pool.Query(ctx, `
		select p.instance, p.server, p.running, p.process, p.pid, p.started_at, p.restarts, p.last_exit, p.stderr,
		       p.updated_at, p.shared, p.sessions, p.max_sessions, `+instanceGone+` as instance_gone
		from local_processes p join instances i on i.id = p.instance
		where p.server = $1 and i.last_seen_at > now() - interval '1 day'
		order by i.started_at, p.instance`, server)
	return pgx.CollectRows(rows, pgx.RowToStructByName[LocalProcess])
}

// instanceGone is true for an instance i that stopped or missed three
// heartbeats.
const instanceGone = `(i.stopped_at is not null or i.last_seen_at < now() - 3 * i.interval_ms * interval '1 millisecond')`

// LocalOwner names the live instance whose running process asked round
// seq of a call, or "" when none does: the round is not a local server's,
// or its process or instance is gone.
func (s *Store) LocalOwner(ctx context.Context, callID string, seq int) (string, error) {
	var owner string
	err := s.pool.QueryRow(ctx, `
		select p.instance
		from rounds r
		join local_processes p on p.process = r.process and p.running
		join instances i on i.id = p.instance
		where r.call_id = $1 and r.seq = $2 and not `+instanceGone, callID, seq).Scan(&owner)
	if err == pgx.ErrNoRows {
		return "", nil
	}
	return owner, err
}

// HandOver moves a request job to the queue of the instance that must run
// it: the job of round seq's retry goes there, and the running job
// completes, in one transaction.
func (s *Store) HandOver(ctx context.Context, running queue.Job, callID string, seq int, instance string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return s.jobs.HandOver(ctx, tx, running, callID, seq, instance)
	})
}

// ReclaimLocalJobs moves the request jobs waiting in the queues of
// instances that are gone back to the default queue, where any instance
// runs them (and finds the process that asked gone).
func (s *Store) ReclaimLocalJobs(ctx context.Context) (int64, error) {
	tag, err := queue.ReclaimLocal(instanceGone).Exec(ctx, s.pool)
	return tag.RowsAffected(), err
}
