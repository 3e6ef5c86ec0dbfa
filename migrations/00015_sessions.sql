-- +goose Up
-- Signed-in sessions. The cookie holds a random secret; only its SHA-256 is
-- kept here, so ending a session (deleting its row) ends it on every
-- instance at the next request.
create table sessions (
    id           bigint generated always as identity primary key,
    user_id      bigint not null references users (id) on delete cascade,
    secret_hash  bytea not null unique,
    user_agent   text not null default '',
    address      text not null default '',
    created_at   timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    expires_at   timestamptz not null
);
create index sessions_user_idx on sessions (user_id);

-- +goose Down
drop table sessions;
