import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { TENANT_ROLE } from "./TenantIsolation"

/**
 * The hourly rollups leave the insert path (issue 28): an audit row no longer costs its batch three
 * upserts in the inserting transaction. Each row records the transaction that wrote it (`txid`), and
 * `gateway_audit_fold()` adds to the rollups the rows of every transaction that has ended since the
 * last fold, by snapshot: a row is folded when its transaction is visible in the stored snapshot (or
 * its id is at most `through_id`: rows from before this migration, counted by the old trigger, or
 * from before a rebuild). A transaction still running at a fold, in any database of the cluster,
 * holds back only its own rows. Stats read the rollups plus the rows not folded. Deletes and
 * count-moving updates still adjust the rollups in their own transaction, for folded rows only; the
 * fold row's lock orders them with a fold. A store restored onto a cluster whose transaction ids are
 * behind the stored snapshot (a pg_dump loaded elsewhere) has its rollups rebuilt from the rows once.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
alter table gateway_audit_logs add column txid xid8;
alter table gateway_audit_logs alter column txid set default pg_current_xact_id();
-- Appended at its right edge (txids grow), it finds the rows not folded without reading the window.
create index gateway_audit_logs_txid_idx on gateway_audit_logs (txid);

create table gateway_audit_fold (
  singleton boolean primary key default true check (singleton),
  folded pg_snapshot not null,
  through_id bigint not null,
  -- The cluster whose transaction ids these are: a store restored onto another one is rebuilt, whatever its ids.
  cluster text not null default (pg_control_system()).system_identifier::text
);
-- The ALTER TABLE above holds every writer off until this commits: each row so far was counted by the trigger dropped below.
insert into gateway_audit_fold (folded, through_id) select pg_current_snapshot(), coalesce(max(id), 0) from gateway_audit_logs;
grant select on gateway_audit_fold to ${TENANT_ROLE};

drop trigger gateway_audit_rollup_inserted on gateway_audit_logs;

create or replace function gateway_audit_rollup() returns trigger
language plpgsql security definer set search_path from current as $$
declare
  direction constant bigint := TG_ARGV[0]::bigint;
  fold gateway_audit_fold;
begin
  if TG_OP = 'UPDATE' then
    if not exists (
      select id, txid, org_id, "timestamp" / 3600 * 3600, outcome, key_id, principal, block_reason from changed
      except all
      select id, txid, org_id, "timestamp" / 3600 * 3600, outcome, key_id, principal, block_reason from other
    ) then
      return null;
    end if;
  end if;
  -- Shared: a fold waits for this transaction, or this waits for the fold and sees where it ended.
  select * into fold from gateway_audit_fold for share;

  insert into gateway_audit_hourly as t (org_id, hour, success, refused, error)
    select org_id, "timestamp" / 3600 * 3600,
      direction * count(*) filter (where outcome = 'success'),
      direction * count(*) filter (where outcome = 'refused'),
      direction * count(*) filter (where outcome = 'error')
    from changed where org_id is not null and (id <= fold.through_id or pg_visible_in_snapshot(txid, fold.folded))
    group by 1, 2 order by 1, 2
  on conflict (org_id, hour) do update
    set success = t.success + excluded.success, refused = t.refused + excluded.refused, error = t.error + excluded.error;

  insert into gateway_audit_hourly_keys as t (org_id, hour, key_id, principal, requests)
    select org_id, "timestamp" / 3600 * 3600, key_id, principal, direction * count(*)
    from changed where org_id is not null and key_id is not null and (id <= fold.through_id or pg_visible_in_snapshot(txid, fold.folded))
    group by 1, 2, 3, 4 order by 1, 2, 3, 4
  on conflict (org_id, hour, key_id, principal) do update set requests = t.requests + excluded.requests;

  insert into gateway_audit_hourly_block_reasons as t (org_id, hour, block_reason, count)
    select org_id, "timestamp" / 3600 * 3600, block_reason, direction * count(*)
    from changed where org_id is not null and block_reason is not null and (id <= fold.through_id or pg_visible_in_snapshot(txid, fold.folded))
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

-- Adds the rows of every transaction that ended since the last fold to the rollups; returns how many rows it added.
-- Planned for the stored snapshot each time (a generic plan would not know how few rows that is).
-- A lock held by a long transaction fails this fold (the next one tries again) instead of holding a connection.
create function gateway_audit_fold() returns bigint
language plpgsql security definer set search_path from current set plan_cache_mode = force_custom_plan set lock_timeout = '2s' as $$
declare
  was gateway_audit_fold;
  seen pg_snapshot;
  running xid8[];
  added bigint;
  here constant text := (pg_control_system()).system_identifier::text;
begin
  -- Its own transaction would be missing from the snapshot it stores, and its rows never added.
  if pg_current_xact_id_if_assigned() is not null then
    raise exception 'gateway_audit_fold() runs in a transaction of its own';
  end if;
  select * into was from gateway_audit_fold;
  if was.cluster <> here or pg_snapshot_xmax(was.folded) > pg_snapshot_xmax(pg_current_snapshot()) then
    -- Transaction ids behind the stored snapshot: the rows came from another cluster (a restore). Rebuilt from the rows,
    -- with writers held off (readers go on) so that every row up to the highest id is committed.
    lock table gateway_audit_logs in share row exclusive mode;
    select * into was from gateway_audit_fold for update;
    if was.cluster <> here or pg_snapshot_xmax(was.folded) > pg_snapshot_xmax(pg_current_snapshot()) then
      delete from gateway_audit_hourly;
      delete from gateway_audit_hourly_keys;
      delete from gateway_audit_hourly_block_reasons;
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
      update gateway_audit_fold set folded = pg_current_snapshot(), through_id = (select coalesce(max(id), 0) from gateway_audit_logs), cluster = here;
      return (select count(*) from gateway_audit_logs where org_id is not null);
    end if;
  else
    select * into was from gateway_audit_fold for update;
  end if;
  seen := pg_current_snapshot();
  running := array(select pg_snapshot_xip(was.folded));
  with fresh as materialized (
    select org_id, "timestamp" / 3600 * 3600 as hour, outcome, key_id, principal, block_reason
    from gateway_audit_logs
    -- Not added yet (written after the last fold, or by a transaction it saw running), and ended by now.
    where id > was.through_id and (txid >= pg_snapshot_xmax(was.folded) or txid = any(running))
      and not pg_visible_in_snapshot(txid, was.folded) and pg_visible_in_snapshot(txid, seen) and org_id is not null
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
  -- Nothing added: the stored snapshot still says the same, and an unchanged row troubles no REPEATABLE READ writer.
  if added > 0 then
    update gateway_audit_fold set folded = seen;
  end if;
  return added;
end $$;
revoke execute on function gateway_audit_fold() from public;

-- A truncate may restart the ids: no row is counted by its id any more.
create or replace function gateway_audit_rollup_clear() returns trigger
language plpgsql security definer set search_path from current as $$
begin
  truncate gateway_audit_hourly, gateway_audit_hourly_keys, gateway_audit_hourly_block_reasons;
  update gateway_audit_fold set through_id = 0;
  return null;
end $$;
`)
)
