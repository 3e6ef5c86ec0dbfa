package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// Instance is a running (or lately running) app instance, as its heartbeat
// last described it.
type Instance struct {
	ID          string     `db:"id"`
	Version     string     `db:"version"`
	Hostname    string     `db:"hostname"`
	PID         int        `db:"pid"`
	StartedAt   time.Time  `db:"started_at"`
	LastSeenAt  time.Time  `db:"last_seen_at"`
	IntervalMs  int        `db:"interval_ms"`
	JobsRunning int        `db:"jobs_running"`
	StoppedAt   *time.Time `db:"stopped_at"`
	// Leader is whether it leads River (periodic jobs, rescues) now.
	Leader bool `db:"leader"`
	// Now is the database's clock, so silence is judged on one clock.
	Now time.Time `db:"now"`
}

// Silent reports whether the instance missed three heartbeats without
// saying it stopped.
func (i *Instance) Silent() bool {
	return i.StoppedAt == nil && i.Now.Sub(i.LastSeenAt) > 3*time.Duration(i.IntervalMs)*time.Millisecond
}

// Heartbeat is what an instance says about itself.
type Heartbeat struct {
	ID        string
	Version   string
	Hostname  string
	PID       int
	StartedAt time.Time
	Interval  time.Duration
	// AuthHeard is the last change to sign-ins the instance has heard of
	// (see authCache).
	AuthHeard int64
}

// Beat records that the instance is alive, with the River jobs it is
// running now (River's client id is the instance id).
func (s *Store) Beat(ctx context.Context, hb Heartbeat) error {
	_, err := s.pool.Exec(ctx, `
		insert into instances (id, version, hostname, pid, started_at, last_seen_at, interval_ms, jobs_running, auth_heard)
		values ($1, $2, $3, $4, $5, now(), $6,
		        `+queue.RunningOn+`, $7)
		on conflict (id) do update
		set last_seen_at = now(), jobs_running = excluded.jobs_running, stopped_at = null,
		    auth_heard = greatest(instances.auth_heard, excluded.auth_heard)`,
		hb.ID, hb.Version, hb.Hostname, hb.PID, hb.StartedAt, hb.Interval.Milliseconds(), hb.AuthHeard)
	return err
}

// StopInstance records that an instance shut down cleanly.
func (s *Store) StopInstance(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `update instances set stopped_at = now(), jobs_running = 0 where id = $1`, id)
	return err
}

// Instances lists the instances seen in the last day, newest first.
func (s *Store) Instances(ctx context.Context) ([]Instance, error) {
	rows, _ := s.pool.Query(ctx, `
		select i.id, i.version, i.hostname, i.pid, i.started_at, i.last_seen_at, i.interval_ms,
		       i.jobs_running, i.stopped_at,
		       `+queue.Leads+` as leader,
		       now() as now
		from instances i
		where i.last_seen_at > now() - interval '1 day'
		order by i.started_at desc`)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Instance])
}

// PruneInstances forgets instances not seen for a day.
func (s *Store) PruneInstances(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `delete from instances where last_seen_at < now() - interval '1 day'`)
	return err
}
