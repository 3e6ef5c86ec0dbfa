-- +goose Up
-- What a round's writes cost in Postgres's triggers, found with perf over a
-- load run (docs/performance.md, "Where Postgres spends a round"): a
-- row trigger enters PL/pgSQL on every update even when it changes
-- nothing, and round_outcome, a SQL function, was parsed and planned
-- again in every transaction that answered a round.

-- The trigger's own test, as its WHEN: Postgres evaluates it without
-- calling the function, and almost no update of a call has a retry to
-- clear.
drop trigger calls_clear_retry on calls;
create trigger calls_clear_retry before update on calls
    for each row
    when (new.retry_since is not null
          and (new.status not in ('queued', 'running') or new.current_seq <> old.current_seq))
    execute function calls_clear_retry();

-- Only a round leaving 'pending' gets an outcome.
drop trigger rounds_outcome on rounds;
create trigger rounds_outcome before update of status on rounds
    for each row
    when (old.status = 'pending' and new.status <> 'pending')
    execute function rounds_set_outcome();

-- The same answer as before, in PL/pgSQL, whose plan lasts for the
-- connection: the answers' actions are read once.
-- +goose StatementBegin
create or replace function round_outcome(responses json) returns text
language plpgsql immutable as $$
declare
    actions text[];
begin
    if json_typeof(responses) is distinct from 'object' then
        return 'answered';
    end if;
    select array_agg(coalesce(e.value ->> 'action', '')) into actions from json_each(responses) e;
    if 'cancel' = any(actions) then
        return 'cancelled';
    end if;
    if 'decline' = all(actions) then
        return 'declined';
    end if;
    return 'answered';
end
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
create or replace function round_outcome(responses json) returns text
language sql immutable as $$
    select case
        when json_typeof(responses) is distinct from 'object' then 'answered'
        when exists (select 1 from json_each(responses) e where e.value ->> 'action' = 'cancel') then 'cancelled'
        when exists (select 1 from json_each(responses))
             and not exists (select 1 from json_each(responses) e
                             where coalesce(e.value ->> 'action', '') <> 'decline') then 'declined'
        else 'answered'
    end
$$;
-- +goose StatementEnd
drop trigger rounds_outcome on rounds;
create trigger rounds_outcome before update of status on rounds
    for each row execute function rounds_set_outcome();
drop trigger calls_clear_retry on calls;
create trigger calls_clear_retry before update on calls
    for each row execute function calls_clear_retry();
