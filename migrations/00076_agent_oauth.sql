-- +goose Up
-- Rounds as an OAuth 2.1 authorization server for agents (package
-- authserver). Clients register themselves (RFC 7591) or are named by the
-- https URL of their client ID metadata document, kept here as last read.
create table agent_clients (
    id            text primary key check (length(id) <= 2048),
    name          text not null default '' check (length(name) <= 200),
    redirect_uris text[] not null,
    secret_hash   bytea,                 -- null: a public client
    metadata_url  boolean not null default false, -- id is its metadata document's URL
    fetched_at    timestamptz not null default now(),
    created_at    timestamptz not null default now()
);

-- A grant is one person's consent to one client for some servers: the
-- account page's "connected agents". Deleting it revokes its tokens.
create table agent_grants (
    id           bigint generated always as identity primary key,
    user_id      bigint not null references users (id) on delete cascade,
    client_id    text not null references agent_clients (id) on delete cascade,
    servers      text[] not null,
    created_at   timestamptz not null default now(),
    last_used_at timestamptz,
    unique (user_id, client_id)
);

-- An authorization request, from /authorize until its code is exchanged.
-- resources are server names (RFC 8707, PUBLIC_URL/mcp/{server}).
create table agent_auth_requests (
    id             uuid primary key,
    client_id      text not null references agent_clients (id) on delete cascade,
    redirect_uri   text not null,
    state          text not null default '',
    nonce          text not null default '',
    scopes         text[] not null default '{}',
    response_mode  text not null default '',
    code_challenge text not null,
    resources      text[] not null,
    grant_id       bigint references agent_grants (id) on delete cascade,
    code_hash      bytea unique,
    expires_at     timestamptz not null,
    created_at     timestamptz not null default now()
);
create index agent_auth_requests_expires_idx on agent_auth_requests (expires_at);

-- Access ('access', rnda_…) and refresh ('refresh', rndr_…) tokens, kept
-- only as SHA-256 hashes. A refresh token is used once (used_at).
create table agent_tokens (
    hash       bytea primary key,
    kind       text not null check (kind in ('access', 'refresh')),
    grant_id   bigint not null references agent_grants (id) on delete cascade,
    servers    text[] not null,
    scopes     text[] not null default '{}',
    expires_at timestamptz not null,
    used_at    timestamptz,
    created_at timestamptz not null default now()
);
create index agent_tokens_grant_idx on agent_tokens (grant_id);
create index agent_tokens_expires_idx on agent_tokens (expires_at);

-- +goose Down
drop table agent_tokens;
drop table agent_auth_requests;
drop table agent_grants;
drop table agent_clients;
