-- +goose Up
-- call_header_schema looked through the server's whole tool catalog on
-- every request, printing each tool's inputSchema as text to find the
-- x-mcp-header mark: a cost that grew with the catalog, paid on every
-- request of every call. The tools that carry the mark are found once,
-- when the catalog is stored, and kept beside it by name.

-- +goose StatementBegin
create function tools_header_schemas(tools jsonb) returns jsonb
language sql immutable as $$
    -- Of two tools of one name, the first in the list wins, as before; a
    -- later key replaces an earlier one in jsonb_object_agg.
    select coalesce(jsonb_object_agg(t.tool->>'name', t.tool->'inputSchema' order by t.i desc), '{}')
    from jsonb_array_elements(case when jsonb_typeof(tools) = 'array' then tools else '[]' end)
         with ordinality as t(tool, i)
    where t.tool->>'name' is not null
      and strpos((t.tool->'inputSchema')::text, 'x-mcp-header') > 0
$$;
-- +goose StatementEnd

alter table servers add column header_schemas jsonb not null
    generated always as (tools_header_schemas(tools)) stored;

-- +goose StatementBegin
create or replace function call_header_schema(call uuid) returns jsonb
language plpgsql stable as $$
begin
    return (select s.header_schemas -> c.target from calls c join servers s on s.id = c.server_id
        where c.id = call_header_schema.call and c.method = 'tools/call');
end;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
create or replace function call_header_schema(call uuid) returns jsonb
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
alter table servers drop column header_schemas;
drop function tools_header_schemas(jsonb);
