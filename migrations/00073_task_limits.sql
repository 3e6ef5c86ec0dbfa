-- +goose NO TRANSACTION
-- +goose Up
-- Tasks (the io.modelcontextprotocol/tasks extension) must not starve the
-- other jobs (engine/tasks.go). Each statement stands alone, so the
-- indexes are built without blocking the writes of a large calls table.

-- A server's limit on tasks at once (null: store.DefaultMaxTasks), and
-- whether it ever ran one: only then do its calls take a place before
-- they are sent.
alter table servers add column if not exists max_tasks integer check (max_tasks > 0);
alter table servers add column if not exists runs_tasks boolean not null default false;
update servers set runs_tasks = true
where not runs_tasks and exists (select 1 from calls c where c.server_id = servers.id and c.task_id is not null);

-- When the task started (its lifetime without a ttlMs is capped from
-- then); task_slot, the request that took a place among its server's
-- tasks; task_wait_since, since when the call waits for one.
alter table calls add column if not exists task_started_at timestamptz;
alter table calls add column if not exists task_slot integer;
alter table calls add column if not exists task_wait_since timestamptz;
-- A task already under way gets its whole lifetime from now.
update calls set task_started_at = now()
where task_id is not null and task_started_at is null and status in ('queued', 'running', 'input_required');

-- The places a server's calls hold (store.taskHolds): its tasks under way,
-- and the requests sent to it whose answer may be a task.
create index concurrently if not exists calls_task_slots_idx on calls (server_id)
    where status in ('queued', 'running', 'input_required') and (task_id is not null or task_slot = current_seq);
-- The calls that wait for a place, in line.
create index concurrently if not exists calls_task_waiting_idx on calls (server_id, task_wait_since, id)
    where task_wait_since is not null and status in ('queued', 'running');

-- A call that gives its place up wakes the first in line of its server:
-- the waiting request's job, put off, is made due now. A call waiting
-- behind a job already woken is the next one's. It takes the lock places
-- are taken under (store.TaskSlot, 7302 and the server), so a call put in
-- line meanwhile is seen.
-- +goose StatementBegin
create or replace function calls_wake_task_waiter() returns trigger language plpgsql as $$
begin
    perform pg_advisory_xact_lock(7302, (old.server_id % 2147483648)::int);
    update river_job set state = 'available', scheduled_at = now()
    where id = (select j.id from calls w
                join river_job j on j.kind = 'mcp_request' and j.state = 'scheduled'
                 and j.args @> jsonb_build_object('call_id', w.id::text)
                where w.server_id = old.server_id and w.task_wait_since is not null
                  and w.status in ('queued', 'running')
                order by w.task_wait_since, w.id
                limit 1
                for update of j skip locked);
    return null;
end;
$$;
-- +goose StatementEnd
drop trigger if exists calls_task_place_freed on calls;
-- The trigger's own test, as its WHEN (see migration 00067): a place held
-- before the update and not after.
create trigger calls_task_place_freed after update on calls
    for each row
    when (old.status in ('queued', 'running', 'input_required')
          and (old.task_id is not null or old.task_slot is not distinct from old.current_seq)
          and not (new.status in ('queued', 'running', 'input_required')
                   and (new.task_id is not null or new.task_slot is not distinct from new.current_seq)))
    execute function calls_wake_task_waiter();

-- Task polls (and stops) run in a queue of their own, with workers of
-- their own: the jobs already waiting move there.
update river_job set queue = 'tasks'
where kind in ('task_poll', 'task_cancel') and queue = 'default' and state in ('available', 'scheduled', 'retryable');

-- +goose Down
update river_job set queue = 'default'
where kind in ('task_poll', 'task_cancel') and queue = 'tasks' and state in ('available', 'scheduled', 'retryable');
drop trigger if exists calls_task_place_freed on calls;
drop function if exists calls_wake_task_waiter();
drop index concurrently if exists calls_task_waiting_idx;
drop index concurrently if exists calls_task_slots_idx;
alter table calls drop column if exists task_wait_since;
alter table calls drop column if exists task_slot;
alter table calls drop column if exists task_started_at;
alter table servers drop column if exists runs_tasks;
alter table servers drop column if exists max_tasks;
