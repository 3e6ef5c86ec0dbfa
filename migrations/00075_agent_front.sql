-- +goose Up
-- The JSON-RPC error a server answered a call with, {"code", "message"}, so
-- an agent that started the call through Rounds' front door is given it as
-- the server gave it. Null for any other end.
alter table calls add column server_error jsonb;

-- An agent's notifications/cancelled names its request: the unfinished
-- call that request started is found by its owner and request id.
create index calls_agent_request_idx on calls (owner, (agent->>'request_id'))
    where agent is not null and finished_at is null;

-- +goose Down
drop index calls_agent_request_idx;
alter table calls drop column server_error;
