-- +goose Up
create table users (
    id            bigint generated always as identity primary key,
    name          text not null unique check (name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$'),
    password_hash text,                 -- null for people who sign in through a trusted proxy
    is_admin      boolean not null default false,
    disabled      boolean not null default false,
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now()
);

create table api_tokens (
    id           bigint generated always as identity primary key,
    user_id      bigint not null references users (id) on delete cascade,
    name         text not null check (length(name) between 1 and 100),
    hash         bytea not null unique,  -- SHA-256 of the token; the token itself is never stored
    prefix       text not null,          -- its first characters, to tell tokens apart
    created_at   timestamptz not null default now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
create index api_tokens_user_idx on api_tokens (user_id);

-- Failed sign-ins, counted per account and per address across instances.
create table login_failures (
    key text not null,                   -- 'user:NAME' or 'addr:IP'
    at  timestamptz not null default now()
);
create index login_failures_key_at_idx on login_failures (key, at);

-- Credentials sent to an MCP server, encrypted with AES-GCM.
alter table servers add column header_name text not null default '';
alter table servers add column header_value_enc bytea;

-- +goose Down
alter table servers drop column header_value_enc;
alter table servers drop column header_name;
drop table login_failures;
drop table api_tokens;
drop table users;
