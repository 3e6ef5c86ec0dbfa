-- +goose Up
-- What Rounds learnt about a tool: it asks its questions the handshake-era
-- way (ctx.elicit in FastMCP and the Python SDK), so its calls go over a
-- 2025-11-25 session although the server offers 2026-07-28.
create table tool_protocols (
    server_id  bigint not null references servers(id) on delete cascade,
    tool       text not null,
    protocol   text not null,
    reason     text not null,                     -- what the server said, as text
    learnt_at  timestamptz not null default now(),
    primary key (server_id, tool)
);

alter table calls add column protocol text;       -- the revision this call was started with; null: the server's setting
alter table calls add column asks_over_session boolean not null default false; -- the tool wanted a session this call did not have

-- +goose Down
alter table calls drop column asks_over_session;
alter table calls drop column protocol;
drop table tool_protocols;
