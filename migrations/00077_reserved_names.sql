-- +goose Up
-- The words 'agent' and 'owner' name who answers an agent's questions
-- (servers.agent_questions): no account may take them as its name. A
-- trigger, not a check, refuses them: an account that had such a name
-- before keeps it, and its other changes go on as before (a check would
-- refuse every update of its row). Inserting an existing name is left to
-- the insert's own conflict.
-- +goose StatementBegin
create function users_name_reserved() returns trigger language plpgsql as $$
begin
    if lower(new.name) in ('agent', 'owner')
       and (case when tg_op = 'UPDATE' then old.name <> new.name
                 else not exists (select 1 from users where name = new.name) end) then
        raise exception 'the name % is reserved', new.name
            using errcode = 'check_violation', constraint = 'users_name_reserved';
    end if;
    return new;
end $$;
-- +goose StatementEnd
create trigger users_name_reserved before insert or update of name on users
    for each row execute function users_name_reserved();

-- +goose Down
drop trigger users_name_reserved on users;
drop function users_name_reserved();
