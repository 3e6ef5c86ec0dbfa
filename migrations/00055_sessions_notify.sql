-- +goose Up
-- A session that ends (signed out, ended on the account page, or all of a
-- person's at a password reset) is announced to every instance, which
-- forgets the sessions it remembered: a page request then costs no read to
-- find its person. Notifications with the same payload in one transaction
-- are sent once, so a row trigger costs one however many sessions go.
create trigger sessions_auth_notify after delete on sessions
    for each row execute function notify_auth_changed();

-- +goose Down
drop trigger sessions_auth_notify on sessions;
