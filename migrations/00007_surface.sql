-- +goose Up
-- What each server may ask besides forms and web pages: sampling (a person
-- writes the model's reply) and roots (answered from roots_list, never by
-- asking). Neither is declared to a server unless switched on here.
alter table servers add column sampling boolean not null default false;
alter table servers add column roots boolean not null default false;
alter table servers add column roots_list jsonb not null default '[]'
    check (jsonb_typeof(roots_list) = 'array');  -- [{"uri": "file:///…", "name": "…"}]

-- +goose Down
alter table servers drop column roots_list;
alter table servers drop column roots;
alter table servers drop column sampling;
