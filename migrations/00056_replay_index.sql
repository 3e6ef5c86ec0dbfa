-- +goose NO TRANSACTION
-- +goose Up
-- The admin's server page measures how long a server keeps its questions
-- from its refusals. Built without blocking the writes of a large rounds
-- table.
create index concurrently if not exists rounds_state_expired_idx on rounds (state_expired_at) where state_expired_at is not null;

-- +goose Down
drop index concurrently if exists rounds_state_expired_idx;
