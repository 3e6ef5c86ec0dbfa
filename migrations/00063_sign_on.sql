-- +goose Up
-- Single sign-on (OpenID Connect): an account made by sign-on is found by
-- its provider's issuer and subject, never by its name or e-mail.
create table user_identities (
    issuer          text not null,
    subject         text not null,
    user_id         bigint not null unique references users (id) on delete cascade,
    created_at      timestamptz not null default now(),
    last_sign_in_at timestamptz not null default now(),
    primary key (issuer, subject)
);

-- A membership sign-on made (from the person's groups) is taken back by
-- sign-on when the group goes; one an admin made by hand stays.
alter table team_members add column by_sign_on boolean not null default false;

-- The ID token of a session begun by sign-on, the hint its provider's
-- end_session_endpoint wants at sign-out.
alter table sessions add column id_token text;

-- +goose Down
alter table sessions drop column id_token;
alter table team_members drop column by_sign_on;
drop table user_identities;
