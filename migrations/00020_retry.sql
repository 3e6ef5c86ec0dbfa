-- +goose Up
-- A request the server could not take now is sent again by itself: when the
-- next attempt goes out, why, and since when it has been trying.
alter table calls add column retry_at timestamptz,
                  add column retry_since timestamptz,
                  add column retry_reason text;

-- Whatever moves the call on (an outcome stored, a new round, the call
-- ended) ends the waiting, without every statement having to say so.
-- +goose StatementBegin
create function calls_clear_retry() returns trigger language plpgsql as $$
begin
    if new.retry_since is not null
       and (new.status not in ('queued', 'running') or new.current_seq <> old.current_seq) then
        new.retry_at := null;
        new.retry_since := null;
        new.retry_reason := null;
    end if;
    return new;
end;
$$;
-- +goose StatementEnd
create trigger calls_clear_retry before update on calls
    for each row execute function calls_clear_retry();

-- +goose Down
drop trigger calls_clear_retry on calls;
drop function calls_clear_retry();
alter table calls drop column retry_reason, drop column retry_since, drop column retry_at;
