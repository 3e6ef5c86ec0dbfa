-- +goose Up
create table servers (
    id               bigint generated always as identity primary key,
    name             text not null unique check (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    url              text not null,
    enabled          boolean not null default true,
    protocol_version text not null default '',
    tools            jsonb,
    tools_expires_at timestamptz,
    created_at       timestamptz not null default now(),
    updated_at       timestamptz not null default now()
);

create table calls (
    id          uuid primary key default gen_random_uuid(),
    server_id   bigint not null references servers (id),
    owner       text not null,
    method      text not null default 'tools/call'
                check (method in ('tools/call', 'prompts/get', 'resources/read')),
    target      text not null,            -- tool name, prompt name or resource URI
    arguments   jsonb not null default '{}',
    status      text not null default 'queued'
                check (status in ('queued', 'running', 'input_required', 'complete', 'failed', 'cancelled', 'expired')),
    current_seq integer not null default 0, -- 0 is the first request; n answers round n
    result      json,                       -- the server's result, as sent
    error       text,
    retryable   boolean not null default false,
    created_at  timestamptz not null default now(),
    updated_at  timestamptz not null default now(),
    finished_at timestamptz
);
create index calls_owner_created_idx on calls (owner, created_at desc);

create table rounds (
    call_id        uuid not null references calls (id) on delete cascade,
    seq            integer not null check (seq > 0),
    input_requests json not null,        -- exactly as the server sent them
    request_state  bytea,                -- the raw JSON string token; null when the server sent none
    status         text not null default 'pending'
                   check (status in ('pending', 'answered', 'expired', 'cancelled')),
    responses      json,                 -- inputResponses as given, once answered
    answered_by    text,
    answered_at    timestamptz,
    expires_at     timestamptz not null,
    created_at     timestamptz not null default now(),
    primary key (call_id, seq)
);
-- The inbox: a person's pending rounds, newest first.
create index rounds_pending_idx on rounds (expires_at) where status = 'pending';

-- Secrets generated once and shared by every instance.
create table secrets (
    name       text primary key,
    value      bytea not null,
    created_at timestamptz not null default now()
);

-- +goose Down
drop table secrets;
drop table rounds;
drop table calls;
drop table servers;
