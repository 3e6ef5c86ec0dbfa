-- +goose Up
-- Agents reach servers through Rounds over MCP (/mcp/{server}). A call an
-- agent started names it: its clientInfo, the protocol it speaks, what it
-- can answer itself, and the API token or OAuth client it came with
-- (store.Agent). Null for a call started in a page or through the API.
alter table calls add column agent jsonb;
create index calls_agent_name_idx on calls ((agent->>'name'), created_at desc) where agent is not null;

-- Who answers the questions of calls that agents start (store.Server
-- AgentQuestions): 'agent', 'owner', a person's name or 'team:NAME'.
alter table servers add column agent_questions text not null default 'agent'
    check (agent_questions <> '' and length(agent_questions) <= 200);

-- Who a round of an agent's call asks, when not the call's assignee:
-- 'agent' (the agent answers over MCP) or 'owner' (a URL-mode question,
-- which only the person who started the call may complete).
alter table rounds add column asks text check (asks in ('agent', 'owner'));

-- +goose Down
alter table rounds drop column asks;
alter table servers drop column agent_questions;
drop index calls_agent_name_idx;
alter table calls drop column agent;
