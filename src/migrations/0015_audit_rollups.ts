import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

/**
 * Hourly counts of the audit log per org, so stats read one row per hour (and per key, per block
 * reason) instead of every row in the window. Triggers keep them exact for every write path (the
 * group-commit writer, a request's own transaction, retention deletes), in the writing transaction;
 * the function is the owner's, so a tenant that may insert audit rows needs no write on the rollups.
 * `hour` is the audit timestamp truncated as the stats always grouped it: "timestamp" / 3600 * 3600.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
create table gateway_audit_hourly (
  org_id text not null,
  hour bigint not null,
  success bigint not null,
  refused bigint not null,
  error bigint not null,
  primary key (org_id, hour)
);
${isolateByOrg("gateway_audit_hourly", { privileges: "select" })}

-- principal is part of the key so that a delete can never leave a stale max(principal)
create table gateway_audit_hourly_keys (
  org_id text not null,
  hour bigint not null,
  key_id text not null,
  principal text,
  requests bigint not null,
  unique nulls not distinct (org_id, hour, key_id, principal)
);
${isolateByOrg("gateway_audit_hourly_keys", { privileges: "select" })}

create table gateway_audit_hourly_block_reasons (
  org_id text not null,
  hour bigint not null,
  block_reason text not null,
  count bigint not null,
  primary key (org_id, hour, block_reason)
);
${isolateByOrg("gateway_audit_hourly_block_reasons", { privileges: "select" })}

-- TG_ARGV[0] is +1 for added rows, -1 for removed ones; "changed" is the statement's transition table
-- ("other" is an update's other side: an update that moves no count, like completing a row's status, does nothing).
create function gateway_audit_rollup() returns trigger
language plpgsql security definer set search_path from current as $$
declare
  direction constant bigint := TG_ARGV[0]::bigint;
begin
  if TG_OP = 'UPDATE' then
    if not exists (
      select org_id, "timestamp" / 3600 * 3600, outcome, key_id, principal, block_reason from changed
      except all
      select org_id, "timestamp" / 3600 * 3600, outcome, key_id, principal, block_reason from other
    ) then
      return null;
    end if;
  end if;

  insert into gateway_audit_hourly as t (org_id, hour, success, refused, error)
    select org_id, "timestamp" / 3600 * 3600,
      direction * count(*) filter (where outcome = 'success'),
      direction * count(*) filter (where outcome = 'refused'),
      direction * count(*) filter (where outcome = 'error')
    from changed where org_id is not null
    group by 1, 2 order by 1, 2
  on conflict (org_id, hour) do update
    set success = t.success + excluded.success, refused = t.refused + excluded.refused, error = t.error + excluded.error;

  insert into gateway_audit_hourly_keys as t (org_id, hour, key_id, principal, requests)
    select org_id, "timestamp" / 3600 * 3600, key_id, principal, direction * count(*)
    from changed where org_id is not null and key_id is not null
    group by 1, 2, 3, 4 order by 1, 2, 3, 4
  on conflict (org_id, hour, key_id, principal) do update set requests = t.requests + excluded.requests;

  insert into gateway_audit_hourly_block_reasons as t (org_id, hour, block_reason, count)
    select org_id, "timestamp" / 3600 * 3600, block_reason, direction * count(*)
    from changed where org_id is not null and block_reason is not null
    group by 1, 2, 3 order by 1, 2, 3
  on conflict (org_id, hour, block_reason) do update set count = t.count + excluded.count;

  if direction < 0 then
    delete from gateway_audit_hourly t using (select distinct org_id, "timestamp" / 3600 * 3600 as hour from changed) c
      where t.org_id = c.org_id and t.hour = c.hour and t.success = 0 and t.refused = 0 and t.error = 0;
    delete from gateway_audit_hourly_keys t using (select distinct org_id, "timestamp" / 3600 * 3600 as hour from changed) c
      where t.org_id = c.org_id and t.hour = c.hour and t.requests = 0;
    delete from gateway_audit_hourly_block_reasons t using (select distinct org_id, "timestamp" / 3600 * 3600 as hour from changed) c
      where t.org_id = c.org_id and t.hour = c.hour and t.count = 0;
  end if;
  return null;
end $$;

create function gateway_audit_rollup_clear() returns trigger
language plpgsql security definer set search_path from current as $$
begin
  truncate gateway_audit_hourly, gateway_audit_hourly_keys, gateway_audit_hourly_block_reasons;
  return null;
end $$;

-- A trigger with transition tables serves one event, so an update is its old rows out and its new rows in.
create trigger gateway_audit_rollup_inserted after insert on gateway_audit_logs
  referencing new table as changed for each statement execute function gateway_audit_rollup('1');
create trigger gateway_audit_rollup_deleted after delete on gateway_audit_logs
  referencing old table as changed for each statement execute function gateway_audit_rollup('-1');
create trigger gateway_audit_rollup_updated_new after update on gateway_audit_logs
  referencing new table as changed old table as other for each statement execute function gateway_audit_rollup('1');
create trigger gateway_audit_rollup_updated_old after update on gateway_audit_logs
  referencing old table as changed new table as other for each statement execute function gateway_audit_rollup('-1');
create trigger gateway_audit_rollup_truncated after truncate on gateway_audit_logs
  for each statement execute function gateway_audit_rollup_clear();

-- Creating the triggers locked out concurrent writers until commit, so this backfill misses nothing.
insert into gateway_audit_hourly (org_id, hour, success, refused, error)
  select org_id, "timestamp" / 3600 * 3600,
    count(*) filter (where outcome = 'success'), count(*) filter (where outcome = 'refused'), count(*) filter (where outcome = 'error')
  from gateway_audit_logs where org_id is not null group by 1, 2;
insert into gateway_audit_hourly_keys (org_id, hour, key_id, principal, requests)
  select org_id, "timestamp" / 3600 * 3600, key_id, principal, count(*)
  from gateway_audit_logs where org_id is not null and key_id is not null group by 1, 2, 3, 4;
insert into gateway_audit_hourly_block_reasons (org_id, hour, block_reason, count)
  select org_id, "timestamp" / 3600 * 3600, block_reason, count(*)
  from gateway_audit_logs where org_id is not null and block_reason is not null group by 1, 2, 3;
`)
)
