-- +goose Up
-- The title the server gave what a call names ("Book a flight" for the tool
-- book_flight), kept with the call so that its pages need not ask again;
-- empty when the server gave none.
alter table calls add column title text not null default '';
-- The time zone a person chose on the account page (an IANA name such as
-- "Europe/Lisbon"); empty means "the browser's", UTC without JavaScript.
alter table users add column time_zone text not null default '';

-- +goose Down
alter table users drop column time_zone;
alter table calls drop column title;
