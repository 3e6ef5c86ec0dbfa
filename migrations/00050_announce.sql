-- +goose Up
-- A transaction that sends a notification holds one lock, shared by every
-- database of the cluster, from just before its commit until the commit is
-- flushed to disk: notifying transactions commit one at a time, each
-- waiting for its own flush. On a round's path (an answer, a request's
-- outcome, a new call) the trigger only notes which calls changed, in
-- `rounds.changed`, when the transaction says `set local rounds.announce =
-- 'after'`; the writer reads their notes before it commits and announces
-- them after, in batches (store/announce.go). Every other change to a call
-- still notifies from the trigger, in its commit.

-- call_note is what a change notification on call_changed says of a call:
-- its state and, when it waits for answers, its current round (never its
-- requestState). Past Postgres' payload limit, the id and state only.
-- +goose StatementBegin
create function call_note(c calls) returns text language plpgsql stable as $$
declare
    payload text;
begin
    payload := json_build_object(
        'id', c.id, 'status', c.status, 'seq', c.current_seq, 'error', c.error,
        'retryable', c.retryable, 'updated_at', c.updated_at, 'result', c.result,
        'round', (select json_build_object('seq', r.seq, 'input_requests', r.input_requests,
                                           'expires_at', r.expires_at, 'status', r.status,
                                           'held', r.held_by is not null)
                  from rounds r
                  where c.status = 'input_required' and r.call_id = c.id and r.seq = c.current_seq))::text;
    if octet_length(payload) > 7900 then
        payload := json_build_object('id', c.id, 'status', c.status, 'seq', c.current_seq,
                                     'partial', true)::text;
    end if;
    return payload;
end;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function notify_call_changed() returns trigger language plpgsql as $$
begin
    if current_setting('rounds.announce', true) = 'after' then
        -- The writer announces it after its commit.
        perform set_config('rounds.changed',
                           concat(current_setting('rounds.changed', true), new.id::text, ' '), true);
        return null;
    end if;
    perform pg_notify('call_changed', call_note(new));
    return null;
end;
$$;
-- +goose StatementEnd

-- +goose Down
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
drop function call_note(calls);
