-- +goose Up
-- A signed-on account's groups are checked again at its provider while it
-- is in use, so that admin and team rights lost there are lost here too.
-- grant_enc is what the provider gave to ask it again (a refresh token, or
-- an access token), encrypted with the credentials key. check_due_at is
-- when the next check may start: the instance that moves it forward does
-- the check, so one account is checked at most once per OIDC_RECHECK across
-- instances. refused_at is set when the provider no longer vouches for the
-- person: their sessions are gone and their API tokens stop until they
-- sign on again. Accounts signed on before have nothing to ask with: due at
-- once, the check signs them out, and signing on again brings it all back.
alter table user_identities
    add column grant_enc bytea,
    add column check_due_at timestamptz not null default now(),
    add column checked_at timestamptz,
    add column refused_at timestamptz;

-- +goose Down
alter table user_identities
    drop column grant_enc,
    drop column check_due_at,
    drop column checked_at,
    drop column refused_at;
