-- +goose Up
-- Rounds that reach people: who answers a call's rounds (a person or a
-- team), people's e-mail addresses, and the mails and webhook deliveries
-- sent about calls.
alter table users add column email text not null default ''
    check (email = '' or (length(email) <= 254 and email ~ '^[^@[:space:][:cntrl:]]+@[^@[:space:][:cntrl:]]+$'));
alter table users add column email_rounds boolean not null default true;  -- mail me when a round waits for me
alter table users add column webhook_secret_enc bytea;                     -- AES-GCM, made on first use

create table teams (
    id         bigint generated always as identity primary key,
    name       text not null unique check (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    created_at timestamptz not null default now()
);

create table team_members (
    team_id  bigint not null references teams (id) on delete cascade,
    user_id  bigint not null references users (id) on delete cascade,
    added_at timestamptz not null default now(),
    primary key (team_id, user_id)
);
create index team_members_user_idx on team_members (user_id);

alter table calls add column assignee text;     -- a user's name or 'team:NAME'; null: the owner
alter table calls add column webhook_url text;  -- where events about the call are posted
create index calls_assignee_waiting_idx on calls (assignee) where status = 'input_required';

-- One row per mail sent: each person gets a round's mail, and its
-- reminder, once, whichever instance sends it.
create table round_mails (
    call_id   uuid not null references calls (id) on delete cascade,
    seq       integer not null,
    recipient text not null,
    kind      text not null check (kind in ('waiting', 'reminder')),
    sent_at   timestamptz not null default now(),
    primary key (call_id, seq, recipient, kind)
);

-- One row per webhook event: its id and body stay the same on every attempt.
create table webhook_deliveries (
    id              text primary key,  -- the webhook-id header
    call_id         uuid not null references calls (id) on delete cascade,
    type            text not null check (type in ('round.waiting', 'call.finished')),
    url             text not null,
    signer          text not null,     -- whose secret signs it: the call's owner
    body            bytea not null,
    created_at      timestamptz not null default now(),
    attempts        integer not null default 0,
    last_attempt_at timestamptz,
    last_status     integer,           -- the receiver's HTTP status, if it answered
    last_error      text,
    delivered_at    timestamptz
);
create index webhook_deliveries_call_idx on webhook_deliveries (call_id, created_at);

-- +goose Down
drop table webhook_deliveries;
drop table round_mails;
drop index calls_assignee_waiting_idx;
alter table calls drop column webhook_url;
alter table calls drop column assignee;
drop table team_members;
drop table teams;
alter table users drop column webhook_secret_enc;
alter table users drop column email_rounds;
alter table users drop column email;
