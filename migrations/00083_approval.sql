-- +goose Up
-- A call some rule of its server's approvals policy applies to waits for
-- people's go-ahead before the server sees it: status approval_required,
-- with its approval. asked is fixed when the approval is asked: the people
-- named and the members of the teams named (ask), each once; arguments
-- are those an approval now counts for, original_arguments those the call
-- came with.
alter table calls drop constraint calls_status_check;
alter table calls add constraint calls_status_check check (status in
    ('queued', 'running', 'input_required', 'authorization_required', 'approval_required',
     'complete', 'failed', 'cancelled', 'expired'));

alter table webhook_deliveries drop constraint webhook_deliveries_type_check,
    add constraint webhook_deliveries_type_check check (type in ('round.waiting', 'round.escalated', 'round.handed_on', 'approval.waiting', 'call.finished'));

create table approvals (
    call_id            uuid primary key references calls (id) on delete cascade,
    rule               jsonb not null,
    ask                text[] not null,
    needs              integer not null check (needs >= 1),
    asked              text[] not null,
    caller             text not null,
    arguments          jsonb not null,
    original_arguments jsonb not null,
    epoch              integer not null default 0,
    state              text not null default 'waiting' check (state in ('waiting', 'approved', 'declined')),
    reason             text not null default '',
    created_at         timestamptz not null default now(),
    expires_at         timestamptz not null,
    ended_at           timestamptz
);
create index approvals_waiting_idx on approvals using gin (asked) where state = 'waiting';
create index approvals_expiry_idx on approvals (expires_at) where state = 'waiting';

create table approval_decisions (
    id        bigint generated always as identity primary key,
    call_id   uuid not null references approvals (call_id) on delete cascade,
    by_name   text not null,
    for_name  text not null,
    decision  text not null check (decision in ('approve', 'decline')),
    arguments jsonb,
    reason    text not null default '',
    epoch     integer not null,
    at        timestamptz not null default now()
);
create index approval_decisions_call_idx on approval_decisions (call_id, id);

-- +goose Down
delete from webhook_deliveries where type in ('approval.waiting', 'round.handed_on');
alter table webhook_deliveries drop constraint webhook_deliveries_type_check,
    add constraint webhook_deliveries_type_check check (type in ('round.waiting', 'round.escalated', 'call.finished'));
drop table approval_decisions;
drop table approvals;
delete from calls where status = 'approval_required';
alter table calls drop constraint calls_status_check;
alter table calls add constraint calls_status_check check (status in
    ('queued', 'running', 'input_required', 'authorization_required', 'complete', 'failed', 'cancelled', 'expired'));
