import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Sandboxes: a Python process next to the data, run by one gateway process; its globals and work
-- directory survive it in a snapshot. The row is the sandbox's record; the process is its host's.
create table sandboxes (
  id text primary key,
  org_id text not null,
  user_id text not null,
  -- who it acts as for its governed queries, checked again at each one; its scopes capped at creation
  principal_kind text not null check (principal_kind in ('api_key', 'jwt', 'local')),
  key_id text,
  created_by text not null,
  scopes text[] not null,
  label text,
  connection_name text,
  row_limit integer,
  budget_usd double precision,
  spent_usd double precision not null default 0,
  timeout_seconds integer not null,
  status text not null check (status in ('starting', 'running', 'idle', 'snapshotted', 'stopped', 'error')),
  error text,
  -- the gateway process holding its process while it runs
  host text,
  executions integer not null default 0,
  queries integer not null default 0,
  unpicklable text[] not null default '{}',
  snapshot_bytes bigint,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  last_used_at timestamptz not null default date_trunc('milliseconds', now()),
  snapshotted_at timestamptz,
  stopped_at timestamptz
);
create index sandboxes_org_idx on sandboxes (org_id, created_at desc, id desc);
create index sandboxes_snapshotted_idx on sandboxes (snapshotted_at) where status = 'snapshotted';
${isolateByOrg("sandboxes", { privileges: "select, insert, update, delete" })}
`)
)
