-- +goose Up
-- Every change to a call wakes whoever waits on it, on any instance:
-- held API requests (?wait=) and the call page's live updates.
-- +goose StatementBegin
create function notify_call_changed() returns trigger language plpgsql as $$
begin
    perform pg_notify('call_changed', new.id::text);
    return null;
end;
$$;
-- +goose StatementEnd
create trigger calls_notify after update or insert on calls
    for each row execute function notify_call_changed();

-- The inbox: a person's calls waiting on them.
create index calls_waiting_idx on calls (owner) where status = 'input_required';

-- +goose Down
drop index calls_waiting_idx;
drop trigger calls_notify on calls;
drop function notify_call_changed();
