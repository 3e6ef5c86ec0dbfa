-- +goose Up
-- Retention: finished calls are deleted in small batches, oldest first.
create index calls_finished_idx on calls (finished_at) where finished_at is not null;

-- The audit log stays append-only for everyone but its retention: a DELETE
-- passes only inside prune_audit_log, and only for rows older than the
-- cut-off it was given (at least a day ago). UPDATE and TRUNCATE are
-- refused as before.
-- +goose StatementBegin
create or replace function audit_log_append_only() returns trigger
language plpgsql as $$
declare
    before text := current_setting('rounds.audit_prune_before', true);
begin
    if tg_op = 'DELETE' and coalesce(before, '') <> '' and old.at < before::timestamptz then
        return old;
    end if;
    raise exception 'audit_log is append-only: % is not allowed', tg_op
        using errcode = 'insufficient_privilege';
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create function prune_audit_log(keep interval, batch integer) returns bigint
language plpgsql as $$
declare
    cutoff timestamptz := now() - keep;
    n bigint;
begin
    if keep < interval '1 day' then
        raise exception 'the audit log is kept at least a day, not %', keep;
    end if;
    perform set_config('rounds.audit_prune_before', cutoff::text, true);
    with gone as (
        delete from audit_log where id in (
            select id from audit_log where at < cutoff order by id limit batch)
        returning 1)
    select count(*) into n from gone;
    perform set_config('rounds.audit_prune_before', '', true);
    return n;
end
$$;
-- +goose StatementEnd

-- +goose Down
drop function prune_audit_log(interval, integer);
-- +goose StatementBegin
create or replace function audit_log_append_only() returns trigger
language plpgsql as $$
begin
    raise exception 'audit_log is append-only: % is not allowed', tg_op
        using errcode = 'insufficient_privilege';
end
$$;
-- +goose StatementEnd
drop index calls_finished_idx;
