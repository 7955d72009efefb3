import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { TENANT_ROLE } from "./TenantIsolation"

/**
 * The hourly rollups leave the insert path (issue 28): an audit row no longer costs its batch three
 * upserts in the inserting transaction. Each row records the transaction that wrote it (`txid`);
 * `gateway_audit_fold()` adds to the rollups every row of a transaction older than every running one
 * (the snapshot's xmin), so no row that commits late is skipped, and moves the horizon past them.
 * Stats read the rollups plus the rows at or past the horizon. Deletes and count-moving updates still
 * adjust the rollups in their own transaction, for folded rows only; the horizon's row lock orders
 * them with a fold. Rows written before this migration have no txid and were counted by the trigger.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
alter table gateway_audit_logs add column txid bigint;
alter table gateway_audit_logs alter column txid set default pg_current_xact_id()::text::bigint;
-- Appended at its right edge (txids grow), it finds the unfolded tail without reading the window.
create index gateway_audit_logs_txid_idx on gateway_audit_logs (txid);

create table gateway_audit_fold (
  singleton boolean primary key default true check (singleton),
  horizon bigint not null
);
insert into gateway_audit_fold (horizon) values (pg_snapshot_xmin(pg_current_snapshot())::text::bigint);
grant select on gateway_audit_fold to ${TENANT_ROLE};

drop trigger gateway_audit_rollup_inserted on gateway_audit_logs;

create or replace function gateway_audit_rollup() returns trigger
language plpgsql security definer set search_path from current as $$
declare
  direction constant bigint := TG_ARGV[0]::bigint;
  folded_before bigint;
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
  -- Shared: a fold waits for this transaction, or this waits for the fold and sees where it ended.
  select horizon into folded_before from gateway_audit_fold for share;

  insert into gateway_audit_hourly as t (org_id, hour, success, refused, error)
    select org_id, "timestamp" / 3600 * 3600,
      direction * count(*) filter (where outcome = 'success'),
      direction * count(*) filter (where outcome = 'refused'),
      direction * count(*) filter (where outcome = 'error')
    from changed where org_id is not null and (txid is null or txid < folded_before)
    group by 1, 2 order by 1, 2
  on conflict (org_id, hour) do update
    set success = t.success + excluded.success, refused = t.refused + excluded.refused, error = t.error + excluded.error;

  insert into gateway_audit_hourly_keys as t (org_id, hour, key_id, principal, requests)
    select org_id, "timestamp" / 3600 * 3600, key_id, principal, direction * count(*)
    from changed where org_id is not null and key_id is not null and (txid is null or txid < folded_before)
    group by 1, 2, 3, 4 order by 1, 2, 3, 4
  on conflict (org_id, hour, key_id, principal) do update set requests = t.requests + excluded.requests;

  insert into gateway_audit_hourly_block_reasons as t (org_id, hour, block_reason, count)
    select org_id, "timestamp" / 3600 * 3600, block_reason, direction * count(*)
    from changed where org_id is not null and block_reason is not null and (txid is null or txid < folded_before)
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

-- Folds the rows of every finished transaction not folded yet; returns how many rows it added.
create function gateway_audit_fold() returns bigint
language plpgsql security definer set search_path from current as $$
declare
  was bigint;
  upto bigint;
  added bigint;
begin
  select horizon into was from gateway_audit_fold for update;
  -- Every transaction below the snapshot's xmin has ended: its rows are all visible from here on.
  upto := pg_snapshot_xmin(pg_current_snapshot())::text::bigint;
  if upto <= was then
    return 0;
  end if;
  with fresh as materialized (
    select org_id, "timestamp" / 3600 * 3600 as hour, outcome, key_id, principal, block_reason
    from gateway_audit_logs where txid >= was and txid < upto and org_id is not null
  ), hourly as (
    insert into gateway_audit_hourly as t (org_id, hour, success, refused, error)
      select org_id, hour, count(*) filter (where outcome = 'success'), count(*) filter (where outcome = 'refused'),
        count(*) filter (where outcome = 'error')
      from fresh group by 1, 2 order by 1, 2
    on conflict (org_id, hour) do update
      set success = t.success + excluded.success, refused = t.refused + excluded.refused, error = t.error + excluded.error
  ), keys as (
    insert into gateway_audit_hourly_keys as t (org_id, hour, key_id, principal, requests)
      select org_id, hour, key_id, principal, count(*) from fresh where key_id is not null
      group by 1, 2, 3, 4 order by 1, 2, 3, 4
    on conflict (org_id, hour, key_id, principal) do update set requests = t.requests + excluded.requests
  ), reasons as (
    insert into gateway_audit_hourly_block_reasons as t (org_id, hour, block_reason, count)
      select org_id, hour, block_reason, count(*) from fresh where block_reason is not null
      group by 1, 2, 3 order by 1, 2, 3
    on conflict (org_id, hour, block_reason) do update set count = t.count + excluded.count
  )
  select count(*) into added from fresh;
  update gateway_audit_fold set horizon = upto;
  return added;
end $$;
revoke execute on function gateway_audit_fold() from public;
`)
)
