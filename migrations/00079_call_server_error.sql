-- +goose Up
-- The JSON-RPC error a server answered a call's request with, as an object
-- ({"code", "message"}), kept with the failed call: an agent's task
-- (the tasks extension) reports it as its failed task's error. Null for a
-- call that did not fail that way.
alter table calls add column server_error jsonb;

-- +goose Down
alter table calls drop column server_error;
