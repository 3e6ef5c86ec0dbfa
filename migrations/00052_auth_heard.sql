-- +goose Up
-- Instances remember who signed-in sessions and API tokens belong to (see
-- store/authcache.go). Every change that could end a sign-in is numbered
-- and announced; each instance forgets what it remembered and records the
-- number it has heard, and the request that made the change waits until
-- every live instance has heard it. A session ended, a password reset or
-- a token revoked is then refused everywhere once the page says so.
create sequence auth_changes;
alter table instances add column auth_heard bigint not null default 0;

-- +goose StatementBegin
create or replace function notify_auth_changed() returns trigger language plpgsql as $$
begin
    perform pg_notify('auth_changed', nextval('auth_changes')::text);
    return null;
end;
$$;
-- +goose StatementEnd

-- Sessions ended, but not the sweep of expired ones that finds none.
-- +goose StatementBegin
create function notify_sessions_ended() returns trigger language plpgsql as $$
begin
    if exists (select from ended) then
        perform pg_notify('auth_changed', nextval('auth_changes')::text);
    end if;
    return null;
end;
$$;
-- +goose StatementEnd
create trigger sessions_auth_notify after delete on sessions
    referencing old table as ended
    for each statement execute function notify_sessions_ended();

-- +goose Down
drop trigger sessions_auth_notify on sessions;
drop function notify_sessions_ended();
-- +goose StatementBegin
create or replace function notify_auth_changed() returns trigger language plpgsql as $$
begin
    perform pg_notify('auth_changed', '');
    return null;
end;
$$;
-- +goose StatementEnd
alter table instances drop column auth_heard;
drop sequence auth_changes;
