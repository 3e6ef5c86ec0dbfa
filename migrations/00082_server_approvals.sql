-- +goose Up
-- A server's approval rules (package approvals), in the servers file's JSON
-- form: a list of {"tools", "when", "ask", "needs"}; null means none. When
-- approvals_from_file is set, the servers file's entry wrote them and sets
-- them again at each start: the admin page shows them read-only.
alter table servers
    add column approvals jsonb check (approvals is null or jsonb_typeof(approvals) = 'array'),
    add column approvals_from_file boolean not null default false;

-- +goose Down
alter table servers drop column approvals, drop column approvals_from_file;
