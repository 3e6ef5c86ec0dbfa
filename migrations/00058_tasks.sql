-- +goose Up
-- A call the server runs as a task (the io.modelcontextprotocol/tasks
-- extension): the server's task id (never shown: it may be the server's
-- bearer token for the task), its status as last polled, how often the
-- server asks to be polled, when it may forget the task, the keys of every
-- question it asked over the task's life (a key re-sent while it waits is
-- the same question), and when a person stopped it.
alter table calls
    add column task_id text,
    add column task_status text,
    add column task_poll_ms integer,
    add column task_expires_at timestamptz,
    add column task_keys text[] not null default '{}',
    add column task_stopped_at timestamptz;

-- A round a task asked: answered with tasks/update, not a retry.
alter table rounds add column task boolean not null default false;

-- +goose Down
alter table rounds drop column task;
alter table calls
    drop column task_id,
    drop column task_status,
    drop column task_poll_ms,
    drop column task_expires_at,
    drop column task_keys,
    drop column task_stopped_at;
