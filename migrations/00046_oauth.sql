-- +goose Up
-- Servers behind OAuth sign-in. oauth_mode says who authorizes: each person
-- for themselves, or an admin once for everyone. A pre-registered client
-- may be set by an admin; oauth_required is set once the server asked for
-- a token, with where its metadata is and the scopes it asked for.
alter table servers
    add column oauth_mode text not null default 'person' check (oauth_mode in ('person', 'shared')),
    add column oauth_client_id text not null default '',
    add column oauth_client_secret_enc bytea,
    add column oauth_required boolean not null default false,
    add column oauth_resource_metadata text not null default '',
    add column oauth_scope text not null default '';

alter table calls drop constraint calls_status_check;
alter table calls add constraint calls_status_check check (status in
    ('queued', 'running', 'input_required', 'authorization_required', 'complete', 'failed', 'cancelled', 'expired'));

-- Clients registered dynamically, per authorization server (a client id
-- is only good at the server that issued it).
create table oauth_clients (
    issuer            text not null,
    redirect_uri      text not null,
    client_id         text not null,
    client_secret_enc bytea,
    auth_method       text not null default 'none',
    created_at        timestamptz not null default now(),
    primary key (issuer, redirect_uri)
);

-- Authorizations under way: one row per redirect to an authorization
-- server, found again by its state when the browser comes back, on any
-- instance, and used once.
create table oauth_flows (
    state             text primary key,
    owner             text not null,          -- '' when an admin connects for everyone
    started_by        text not null,
    server_id         bigint not null references servers (id) on delete cascade,
    call_id           uuid references calls (id) on delete cascade,
    issuer            text not null,
    iss_supported     boolean not null,
    token_endpoint    text not null,
    client_id         text not null,
    client_secret_enc bytea,
    auth_method       text not null,
    redirect_uri      text not null,
    resource          text not null,
    scope             text not null,
    verifier_enc      bytea not null,
    created_at        timestamptz not null default now(),
    expires_at        timestamptz not null,
    used_at           timestamptz
);

-- Connections: a person's (or everyone's, owner '') tokens for a server,
-- encrypted, refreshed under a row lock by whichever instance needs them.
create table oauth_tokens (
    server_id         bigint not null references servers (id) on delete cascade,
    owner             text not null,
    issuer            text not null,
    token_endpoint    text not null,
    client_id         text not null,
    client_secret_enc bytea,
    auth_method       text not null,
    resource          text not null,
    scope             text not null,
    access_enc        bytea not null,
    refresh_enc       bytea,
    expires_at        timestamptz,
    created_at        timestamptz not null default now(),
    updated_at        timestamptz not null default now(),
    primary key (server_id, owner)
);

-- +goose Down
drop table oauth_tokens;
drop table oauth_flows;
drop table oauth_clients;
alter table calls drop constraint calls_status_check;
alter table calls add constraint calls_status_check check (status in
    ('queued', 'running', 'input_required', 'complete', 'failed', 'cancelled', 'expired'));
alter table servers drop column oauth_mode, drop column oauth_client_id, drop column oauth_client_secret_enc,
    drop column oauth_required, drop column oauth_resource_metadata, drop column oauth_scope;
