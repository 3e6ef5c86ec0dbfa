-- +goose Up
-- The level a 2025-11-25 agent set with logging/setLevel: the server's log
-- messages of that level and above, sent during a call the session
-- started, reach the agent on the call's stream.
alter table agent_sessions add column log_level text
    check (log_level in ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'));

-- +goose Down
alter table agent_sessions drop column log_level;
