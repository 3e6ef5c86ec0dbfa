-- +goose Up
-- Handshake-era servers (2025-11-25 and earlier) ask while the call is open,
-- on a session one instance holds.
alter table servers add column protocol text not null default 'auto';   -- 'auto' or a pinned revision
alter table servers add column held_timeout interval check (held_timeout > interval '0'); -- null: HELD_TIMEOUT

alter table calls add column handshake boolean not null default false;  -- sent over a held session

alter table rounds add column held_by text;           -- the instance holding the session; null for 2026-07-28 rounds
alter table rounds add column elicitation_id text;    -- a URL-mode question's elicitationId
alter table rounds add column url_completed_at timestamptz; -- when the server said the URL step finished

-- +goose Down
alter table rounds drop column url_completed_at;
alter table rounds drop column elicitation_id;
alter table rounds drop column held_by;
alter table calls drop column handshake;
alter table servers drop column held_timeout;
alter table servers drop column protocol;
