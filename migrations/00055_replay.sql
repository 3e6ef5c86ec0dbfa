-- +goose Up
-- Answers that outlive the server's memory. A server may refuse a round's
-- requestState when the answer comes back (it expired, or another process
-- sealed it); Rounds then asks the server afresh and gives the person's
-- answers again to the questions that come back the same.
--
-- A call's rounds fall into askings: 0 is the first; each time the server
-- is asked afresh begins the next. A round's position is its place in its
-- asking (null in asking 0, where it is the round's seq), so the round at
-- the same position of the asking before is the one it may repeat.
alter table rounds add column asking integer not null default 0,
                   add column position integer,
                   -- when the server refused this round's state, with its answer
                   add column state_expired_at timestamptz,
                   -- Rounds then asked the server afresh by itself, giving the
                   -- answers again (not a person's retry, which answers anew)
                   add column asked_afresh boolean not null default false;
-- How often Rounds asked afresh by itself; bounded by STATE_RESTARTS.
alter table calls add column restarts integer not null default 0;
-- Whether Rounds may give a person's answers again to this server.
alter table servers add column replay_answers boolean not null default true;

-- +goose Down
alter table servers drop column replay_answers;
alter table calls drop column restarts;
alter table rounds drop column asked_afresh, drop column state_expired_at, drop column position, drop column asking;
