-- +goose Up
-- Local servers (stdio): each instance runs a process of each, and says
-- here how it goes, so any instance's admin page shows every instance's.
create table local_processes (
    instance    text not null,
    server      text not null,
    running     boolean not null default false,
    process     text,                 -- the random name of the running start
    pid         integer,
    started_at  timestamptz,          -- when the running start began
    restarts    integer not null default 0,
    last_exit   text,                 -- how the last start ended
    stderr      text[] not null default '{}', -- its last lines (of every process of the server), oldest first
    shared      boolean not null default true, -- whether it has a long-lived process at all
    sessions    integer not null default 0,    -- processes of calls held on a session of their own, running now
    max_sessions integer not null default 0,   -- of at most this many
    updated_at  timestamptz not null default now(),
    primary key (instance, server)
);
create index local_processes_process on local_processes (process);

-- The process of a local server that asked a 2026-07-28 round: only it
-- can open the round's requestState, so its retry goes to it.
alter table rounds add column process text;

-- +goose Down
alter table rounds drop column process;
drop table local_processes;
