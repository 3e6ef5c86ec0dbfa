-- +goose Up
-- An approval nobody decided by its server's (or its call's) escalation
-- time goes also to the escalation's target: escalate_at and escalate_to
-- are its plan, fixed when it was asked; escalated_at says it happened.
-- An admin may hand an approval on from a person asked to another: each
-- hand-on is kept with whom it was from, to, and who did it.
alter table approvals add column escalate_at timestamptz,
    add column escalate_to text,
    add column escalated_at timestamptz;

create table approval_handovers (
    id        bigint generated always as identity primary key,
    call_id   uuid not null references approvals (call_id) on delete cascade,
    from_name text not null,
    to_name   text not null,
    by_name   text not null,
    at        timestamptz not null default now()
);
create index approval_handovers_call_idx on approval_handovers (call_id, id);

-- +goose Down
drop table approval_handovers;
alter table approvals drop column escalate_at, drop column escalate_to, drop column escalated_at;
