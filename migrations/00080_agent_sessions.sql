-- +goose Up
-- A 2025-11-25 agent's session with one server through Rounds' front door
-- (/mcp/{server}), from its initialize to its DELETE. The Mcp-Session-Id
-- itself is never stored: only its SHA-256 (hex), which calls.agent names
-- as the session, so any instance serves any session and a DELETE on one
-- ends it for all.
create table agent_sessions (
    id             text primary key check (length(id) = 64),
    server         text not null,
    user_id        bigint not null references users (id) on delete cascade,
    token_id       bigint references api_tokens (id) on delete cascade,
    oauth_client   text not null default '',
    oauth_client_name text not null default '',
    client_name    text not null default '' check (length(client_name) <= 200),
    client_version text not null default '' check (length(client_version) <= 100),
    protocol       text not null,
    can_form       boolean not null default false,
    can_url        boolean not null default false,
    can_sampling   boolean not null default false,
    can_roots      boolean not null default false,
    created_at     timestamptz not null default now(),
    last_seen_at   timestamptz not null default now(),
    ended_at       timestamptz
);
create index agent_sessions_user_idx on agent_sessions (user_id);

-- A session's notifications/cancelled names the request it cancels: the
-- call it started is found by session and JSON-RPC id.
create index calls_agent_session_idx on calls ((agent->>'session'), (agent->>'request_id'))
    where agent ? 'session';

-- +goose Down
drop index calls_agent_session_idx;
drop table agent_sessions;
