-- +goose Up
-- A disable made in Rounds (the users page, web user disable) holds
-- against a provider that says the person is active, until an admin
-- enables them. Accounts already disabled count as disabled here unless
-- the last word on them was the provider's deactivation.
alter table users add column disabled_here boolean not null default false;
update users u set disabled_here = true
where u.disabled
  and coalesce((select a.action = 'user.deactivated' and a.actor = 'provisioning' from audit_log a
                where a.target = u.name
                  and a.action in ('user.disabled', 'user.enabled', 'user.deactivated', 'user.reactivated')
                order by a.id desc limit 1), false) = false;

-- A provider's group took over a team made in Rounds of the same name,
-- and could be named admins, the admins' queue. Such teams go back to
-- Rounds (a team the provider made was made in the same transaction as
-- its group), each with an audit entry.
with released as (
    delete from scim_groups g using teams t
    where t.id = g.team_id and (t.created_at < g.created_at or lower(t.name) = 'admins')
    returning t.name, g.display_name)
insert into audit_log (instance, actor, action, target, detail)
select 'migration 00070', 'system', 'team.released', r.name, jsonb_build_object('group', r.display_name)
from released r;

-- An externalId names one person: sign-on links an identity by it. One
-- that several people share is cleared on each (the provider sends it
-- again with its next change), then it is unique.
update scim_users set external_id = null
where external_id in (select external_id from scim_users where external_id is not null
                      group by external_id having count(*) > 1);
drop index scim_users_external_idx;
create unique index scim_users_external_id_key on scim_users (external_id);

-- userName matches in any case (RFC 7643: caseExact false); a lookup by
-- it, as providers make before every create, reads one row.
create index scim_users_user_name_lower_idx on scim_users (lower(user_name));

-- +goose Down
drop index scim_users_user_name_lower_idx;
drop index scim_users_external_id_key;
create index scim_users_external_idx on scim_users (external_id);
alter table users drop column disabled_here;
