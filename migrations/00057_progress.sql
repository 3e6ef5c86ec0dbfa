-- +goose Up
-- What the server last said of a running request's progress
-- (notifications/progress): {"seq", "progress", "total", "message"}, seq
-- naming the request it belongs to. Notes carry it, so every instance's
-- page shows it as it moves.
alter table calls add column progress jsonb;

-- +goose StatementBegin
create or replace function call_note(c calls) returns text language plpgsql stable as $$
declare
    payload text;
begin
    payload := json_build_object(
        'id', c.id, 'status', c.status, 'seq', c.current_seq, 'error', c.error,
        'retryable', c.retryable, 'updated_at', c.updated_at, 'result', c.result, 'progress', c.progress,
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

-- +goose Down
-- +goose StatementBegin
create or replace function call_note(c calls) returns text language plpgsql stable as $$
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
alter table calls drop column progress;
