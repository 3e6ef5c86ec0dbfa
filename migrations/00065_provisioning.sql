-- +goose Up
-- Provisioning (SCIM 2.0): the bearer tokens an identity provider uses,
-- kept as hashes, and what it said of the people and groups it manages.
create table scim_tokens (
    id         bigint generated always as identity primary key,
    name       text not null,
    hash       bytea not null unique,
    created_at timestamptz not null default now(),
    revoked_at timestamptz
);

create table scim_users (
    user_id     bigint primary key references users (id) on delete cascade,
    user_name   text not null unique,
    external_id text,
    attributes  jsonb not null default '{}',
    created_at  timestamptz not null default now(),
    updated_at  timestamptz not null default now()
);
create index scim_users_external_idx on scim_users (external_id);

create table scim_groups (
    team_id      bigint primary key references teams (id) on delete cascade,
    display_name text not null unique,
    external_id  text,
    created_at   timestamptz not null default now(),
    updated_at   timestamptz not null default now()
);

-- +goose Down
drop table scim_groups;
drop table scim_users;
drop table scim_tokens;
