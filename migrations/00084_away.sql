-- +goose Up
-- A person away until a time, whose rounds go to a delegate meanwhile
-- (store.ActingFor): one step only, a delegate's own delegate is not used.
-- Away is away_until > now() with a delegate; both are cleared on return.
alter table users add column away_until timestamptz;
alter table users add column away_delegate text references users (name) on update cascade on delete set null;
alter table users add constraint users_away_not_self check (away_delegate is distinct from name);
create index users_away_delegate_idx on users (away_delegate) where away_delegate is not null;

-- Who a round was answered for, when the person who answered did so in
-- another's place (a delegate for someone away, an admin or the owner for
-- the assignee); null when they answered for themselves.
alter table rounds add column answered_for text;

-- The round's last hand-over: whom it was asked of before, whom it was
-- given to, who gave it and when (POST …/rounds/{seq}/assign).
alter table rounds add column handed_from text;
alter table rounds add column handed_to text;
alter table rounds add column handed_by text;
alter table rounds add column handed_at timestamptz;

-- +goose Down
alter table rounds drop column handed_at;
alter table rounds drop column handed_by;
alter table rounds drop column handed_to;
alter table rounds drop column handed_from;
alter table rounds drop column answered_for;
drop index users_away_delegate_idx;
alter table users drop constraint users_away_not_self;
alter table users drop column away_delegate;
alter table users drop column away_until;
