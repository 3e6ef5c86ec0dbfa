-- +goose Up
-- Rounds in Slack (docs/slack.md).

-- Whether Rounds can trust a user's e-mail address to match them to their
-- Slack account: it came from single sign-on with email_verified, from
-- SCIM, or an admin set it. An address a person typed themselves is not.
alter table users add column email_trusted boolean not null default false;
-- Addresses set before this migration were set by an admin, a provider or
-- a sign-on that did not say it verified them: none is trusted yet.

-- The Slack user an account is, once matched by a trusted address or
-- linked by the person. One Rounds account per Slack user.
alter table users add column slack_user text unique
    check (slack_user ~ '^[UW][A-Z0-9]{2,30}$');

-- The Slack channel a team's rounds are posted to; '' for none.
alter table teams add column slack_channel text not null default ''
    check (slack_channel = '' or slack_channel ~ '^[CGD][A-Z0-9]{2,30}$');

-- Each Slack message a round was posted as, so that it can be updated
-- when the round ends anywhere: its channel and timestamp (Slack's id of
-- a message in its channel).
create table slack_messages (
    call_id    uuid not null,
    seq        integer not null,
    channel    text not null check (length(channel) <= 40),
    ts         text not null check (length(ts) <= 40),
    posted_at  timestamptz not null default now(),
    primary key (call_id, seq, channel),
    foreign key (call_id, seq) references rounds (call_id, seq) on delete cascade
);

-- Interactions already taken (a modal's submission by its view id, a
-- button by its action_ts), so that one Slack resends is taken once.
create table slack_interactions (
    key        text primary key check (length(key) <= 200),
    taken_at   timestamptz not null default now()
);
create index slack_interactions_taken on slack_interactions (taken_at);

-- Link tokens already spent: each links one Slack user once.
create table slack_links_spent (
    nonce      text primary key check (length(nonce) <= 64),
    expires_at timestamptz not null
);

-- +goose Down
drop table slack_links_spent;
drop table slack_interactions;
drop table slack_messages;
alter table teams drop column slack_channel;
alter table users drop column slack_user;
alter table users drop column email_trusted;
