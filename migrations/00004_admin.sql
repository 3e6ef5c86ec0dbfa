-- +goose Up
-- What operators need: a per-server round lifetime, how each round ended,
-- every MCP request attempt, an append-only audit log, and the instances
-- that are running.

-- A server's own round lifetime; null means ROUND_TTL. It applies to rounds
-- created after it is set.
alter table servers add column round_ttl interval check (round_ttl > interval '0');

-- How a set of answers ended a round, from the actions only (never the
-- contents): any cancel cancels it, all declines decline it, else it was
-- answered.
-- +goose StatementBegin
create function round_outcome(responses json) returns text
language sql immutable as $$
    select case
        when json_typeof(responses) is distinct from 'object' then 'answered'
        when exists (select 1 from json_each(responses) e where e.value ->> 'action' = 'cancel') then 'cancelled'
        when exists (select 1 from json_each(responses))
             and not exists (select 1 from json_each(responses) e
                             where coalesce(e.value ->> 'action', '') <> 'decline') then 'declined'
        else 'answered'
    end
$$;
-- +goose StatementEnd

-- outcome and ended_at are set when a round leaves 'pending', by whatever
-- statement does it, so charts and metrics group by a plain column.
alter table rounds add column outcome text check (outcome in ('answered', 'declined', 'cancelled', 'expired'));
alter table rounds add column ended_at timestamptz;
update rounds set outcome = case status when 'answered' then round_outcome(responses) else status end,
                  ended_at = coalesce(answered_at, expires_at)
where status <> 'pending';

-- +goose StatementBegin
create function rounds_set_outcome() returns trigger
language plpgsql as $$
begin
    if old.status = 'pending' and new.status <> 'pending' then
        new.ended_at := coalesce(new.answered_at, now());
        new.outcome := case new.status when 'answered' then round_outcome(new.responses) else new.status end;
    end if;
    return new;
end
$$;
-- +goose StatementEnd
create trigger rounds_outcome before update of status on rounds
    for each row execute function rounds_set_outcome();
create index rounds_ended_idx on rounds (ended_at) where ended_at is not null;

-- Calls across everyone, newest first, for the admin pages.
create index calls_created_idx on calls (created_at desc);

-- One row per MCP request the engine made: the first request (seq 0) or
-- the retry carrying the answers to round seq.
create table attempts (
    id          bigint generated always as identity primary key,
    call_id     uuid not null references calls (id) on delete cascade,
    seq         integer not null,
    instance    text not null,
    started_at  timestamptz not null,
    duration_ms integer not null,
    outcome     text not null check (outcome in ('result', 'input_required', 'error', 'too_many_rounds')),
    error       text
);
create index attempts_call_idx on attempts (call_id, id);

-- Who did what, when, from which instance. Never answer contents or
-- request state: names, ids, actions and counts only.
create table audit_log (
    id       bigint generated always as identity primary key,
    at       timestamptz not null default now(),
    instance text not null,
    actor    text not null,           -- a user's name, or 'system'
    action   text not null,           -- such as 'sign_in', 'round.answered', 'server.added'
    target   text not null default '', -- what it was done to: a call id, a server or user name
    addr     text not null default '', -- the client's address, for requests
    detail   jsonb not null default '{}'
);
create index audit_log_actor_idx on audit_log (actor, id desc);
create index audit_log_action_idx on audit_log (action, id desc);

-- +goose StatementBegin
create function audit_log_append_only() returns trigger
language plpgsql as $$
begin
    raise exception 'audit_log is append-only: % is not allowed', tg_op
        using errcode = 'insufficient_privilege';
end
$$;
-- +goose StatementEnd
create trigger audit_log_no_change before update or delete on audit_log
    for each row execute function audit_log_append_only();
create trigger audit_log_no_truncate before truncate on audit_log
    for each statement execute function audit_log_append_only();

-- Every running instance says it is alive every interval_ms.
create table instances (
    id           text primary key,  -- hostname-pid-random; also River's client id
    version      text not null,
    hostname     text not null,
    pid          integer not null,
    started_at   timestamptz not null,
    last_seen_at timestamptz not null,
    interval_ms  integer not null,
    jobs_running integer not null default 0,
    stopped_at   timestamptz
);

-- +goose Down
drop table instances;
drop table audit_log;
drop function audit_log_append_only();
drop table attempts;
drop index calls_created_idx;
drop trigger rounds_outcome on rounds;
drop function rounds_set_outcome();
alter table rounds drop column ended_at;
alter table rounds drop column outcome;
drop function round_outcome(json);
alter table servers drop column round_ttl;
