-- +goose Up
-- Reads a round makes on every request, as PL/pgSQL functions: a function
-- keeps the plans of its statements for the life of the server
-- connection, where the same statement sent from the app is parsed and
-- planned on every run when it goes through PgBouncer in transaction
-- mode (no prepared statement outlives a transaction there). Their
-- planning was a third of Postgres's time per round through the pooler
-- (docs/scaling.md).

-- The notes of the calls the transaction changed, as the trigger on calls
-- listed them (see migration 00050).
-- +goose StatementBegin
create function changed_call_notes() returns table (id text, working boolean, note text)
language plpgsql stable as $$
#variable_conflict use_column
begin
    return query select c.id::text, c.status in ('queued', 'running'), call_note(c) from calls c
        where c.id = any(string_to_array(trim(current_setting('rounds.changed', true)), ' ')::uuid[]);
end;
$$;
-- +goose StatementEnd

-- The inputSchema of the call's tool, as the server's cached catalog has
-- it, when it marks arguments x-mcp-header; else null.
-- +goose StatementBegin
create function call_header_schema(call uuid) returns jsonb
language plpgsql stable as $$
begin
    return (select t->'inputSchema' from calls c join servers s on s.id = c.server_id
        cross join lateral jsonb_array_elements(case when jsonb_typeof(s.tools) = 'array' then s.tools else '[]' end) t
        where c.id = call_header_schema.call and c.method = 'tools/call' and t->>'name' = c.target
          and strpos((t->'inputSchema')::text, 'x-mcp-header') > 0
        limit 1);
end;
$$;
-- +goose StatementEnd

-- The connection the call's owner (or, for a server shared by all, every
-- person) has at the call's server.
-- +goose StatementBegin
create function call_oauth_token(call uuid) returns setof oauth_tokens
language plpgsql stable as $$
begin
    return query select t.* from calls c join servers s on s.id = c.server_id
        join oauth_tokens t on t.server_id = c.server_id
         and t.owner = case s.oauth_mode when 'shared' then '' else c.owner end
        where c.id = call_oauth_token.call;
end;
$$;
-- +goose StatementEnd

-- Whether person is an active member of the team the call is assigned
-- to (assignee 'team:NAME', store.TeamPrefix); false when it is assigned
-- to no team.
-- +goose StatementBegin
create function call_team_member(call uuid, person text) returns boolean
language plpgsql stable as $$
begin
    return exists (select 1 from calls c
        join teams t on t.name = substr(c.assignee, length('team:') + 1)
        join team_members m on m.team_id = t.id join users u on u.id = m.user_id
        where c.id = call_team_member.call and starts_with(c.assignee, 'team:')
          and u.name = call_team_member.person and not u.disabled);
end;
$$;
-- +goose StatementEnd

-- +goose Down
drop function call_team_member(uuid, text);
drop function call_oauth_token(uuid);
drop function call_header_schema(uuid);
drop function changed_call_notes();
