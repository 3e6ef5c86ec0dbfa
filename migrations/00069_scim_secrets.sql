-- +goose Up
-- Provisioning keeps no secret a provider sends. Providers that sync
-- passwords (Okta's "Sync password") sent them on every create and change,
-- and they were kept with the rest of the person, in clear, and given
-- back. RFC 7643 makes `password` writeOnly and returned never: it is
-- taken out of what is kept of each person.
update scim_users
set attributes = (select coalesce(jsonb_object_agg(a.key, a.value), '{}'::jsonb)
                  from jsonb_each(attributes) as a where lower(a.key) <> 'password')
where case when jsonb_typeof(attributes) = 'object'
           then exists (select 1 from jsonb_object_keys(attributes) as k where lower(k) = 'password')
           else false end;

-- A provisioning token is named in the audit log and revoked by its name,
-- so names are unique: a later token with a name already taken gets a
-- number (okta, okta-2). When it was last used is kept, for the list.
alter table scim_tokens add column last_used_at timestamptz;

-- +goose StatementBegin
do $$
declare
    t record;
    n int;
begin
    for t in select d.id, d.name from (
            select id, name, row_number() over (partition by name order by id) as nth from scim_tokens) as d
        where d.nth > 1 order by d.id
    loop
        n := 2;
        while exists (select 1 from scim_tokens where name = t.name || '-' || n) loop
            n := n + 1;
        end loop;
        update scim_tokens set name = t.name || '-' || n where id = t.id;
    end loop;
end
$$;
-- +goose StatementEnd

create unique index scim_tokens_name_key on scim_tokens (name);

-- +goose Down
drop index scim_tokens_name_key;
alter table scim_tokens drop column last_used_at;
