-- +goose Up
-- A call's change notification carries what a waiting request shows: the
-- call's state and its current round's questions (never its requestState),
-- so a held request answers without reading the call again. Past the
-- payload limit it carries the id and state only, and waiters read.
-- +goose StatementBegin
create or replace function notify_call_changed() returns trigger language plpgsql as $$
declare
    payload text;
begin
    payload := json_build_object(
        'id', new.id, 'status', new.status, 'seq', new.current_seq, 'error', new.error,
        'retryable', new.retryable, 'updated_at', new.updated_at, 'result', new.result,
        'round', (select json_build_object('seq', r.seq, 'input_requests', r.input_requests,
                                           'expires_at', r.expires_at, 'status', r.status,
                                           'held', r.held_by is not null)
                  from rounds r
                  where new.status = 'input_required' and r.call_id = new.id and r.seq = new.current_seq))::text;
    if octet_length(payload) > 7900 then
        payload := json_build_object('id', new.id, 'status', new.status, 'seq', new.current_seq,
                                     'partial', true)::text;
    end if;
    perform pg_notify('call_changed', payload);
    return null;
end;
$$;
-- +goose StatementEnd

-- Who may sign in changes rarely; when it does, every instance forgets
-- what it remembered of users and tokens.
-- +goose StatementBegin
create function notify_auth_changed() returns trigger language plpgsql as $$
begin
    perform pg_notify('auth_changed', '');
    return null;
end;
$$;
-- +goose StatementEnd
create trigger users_auth_notify after update or delete on users
    for each statement execute function notify_auth_changed();
create trigger api_tokens_auth_notify after update of revoked_at, user_id, hash or delete on api_tokens
    for each statement execute function notify_auth_changed();

-- +goose Down
drop trigger api_tokens_auth_notify on api_tokens;
drop trigger users_auth_notify on users;
drop function notify_auth_changed();
-- +goose StatementBegin
create or replace function notify_call_changed() returns trigger language plpgsql as $$
begin
    perform pg_notify('call_changed', new.id::text);
    return null;
end;
$$;
-- +goose StatementEnd
