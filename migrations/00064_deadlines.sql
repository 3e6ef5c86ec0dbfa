-- +goose Up
-- What happens to a round nobody answers: after escalate_after it goes to
-- escalate_to (a person or team:NAME); at its deadline it expires, or is
-- answered with decline or cancel (on_expiry). Per server, and per call
-- over the server's.
alter table servers add column escalate_after interval,
    add column escalate_to text,
    add column on_expiry text not null default 'expire' check (on_expiry in ('expire', 'decline', 'cancel'));

create table call_deadlines (
    call_id        uuid primary key references calls (id) on delete cascade,
    escalate_after interval,
    escalate_to    text,
    on_expiry      text check (on_expiry in ('expire', 'decline', 'cancel'))
);

-- The plan a waiting round was given when it was made, and what came of
-- its escalation. A round whose on_expiry is not 'expire' is left to its
-- deadline job, not to the expiry sweep.
alter table rounds add column on_expiry text not null default 'expire',
    add column escalate_at timestamptz,
    add column escalate_to text,
    add column escalated_at timestamptz,
    add column escalated_from text;

alter table webhook_deliveries drop constraint webhook_deliveries_type_check,
    add constraint webhook_deliveries_type_check check (type in ('round.waiting', 'round.escalated', 'call.finished'));

-- +goose Down
delete from webhook_deliveries where type = 'round.escalated';
alter table webhook_deliveries drop constraint webhook_deliveries_type_check,
    add constraint webhook_deliveries_type_check check (type in ('round.waiting', 'call.finished'));
alter table rounds drop column on_expiry, drop column escalate_at, drop column escalate_to,
    drop column escalated_at, drop column escalated_from;
drop table call_deadlines;
alter table servers drop column escalate_after, drop column escalate_to, drop column on_expiry;
