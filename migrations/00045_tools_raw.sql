-- +goose Up
-- Each tool exactly as the server sent it, in its order (json keeps the
-- text; jsonb would reorder keys), for the API's tool listing.
alter table servers add column tools_raw json;

-- +goose Down
alter table servers drop column tools_raw;
