-- +goose Up
-- The inbox's "Lately settled" is read from a person's most recently
-- changed calls (a round's end changes its call), not from every round
-- that ended lately: with millions of rounds, the latter walked all of
-- them for a person who had few.
create index calls_assignee_updated_idx on calls (assignee, updated_at desc) where assignee is not null;
create index calls_owner_updated_idx on calls (owner, updated_at desc) where assignee is null;

-- +goose Down
drop index calls_owner_updated_idx;
drop index calls_assignee_updated_idx;
