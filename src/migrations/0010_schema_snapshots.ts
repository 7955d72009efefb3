import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg, TENANT_ROLE } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- the current scan of each connection: replaced by the next scan, never expired
create table schema_snapshots (
  connection_id text primary key references connections (id) on delete cascade,
  org_id text not null,
  version integer not null,
  fingerprint text not null,
  -- the include/exclude globs the scan honoured; a snapshot taken under other globs is scanned again
  filters text not null,
  scanned_at timestamptz not null,
  scan_ms double precision not null,
  table_count integer not null,
  column_count integer not null,
  -- gzip of the tables as JSON: a 10,000-table catalog is 14 MB of JSON and under 1 MB compressed
  tables bytea not null
);
create index schema_snapshots_org_idx on schema_snapshots (org_id);
${isolateByOrg("schema_snapshots", { privileges: "select, insert, update, delete" })}

-- every structural change a scan found, kept for the connection's life
create table schema_changes (
  id bigserial primary key,
  org_id text not null,
  connection_id text not null references connections (id) on delete cascade,
  from_version integer,
  to_version integer not null,
  detected_at timestamptz not null default date_trunc('milliseconds', now()),
  diff jsonb not null
);
create index schema_changes_org_idx on schema_changes (org_id, id desc);
create index schema_changes_conn_idx on schema_changes (connection_id, id desc);
${isolateByOrg("schema_changes", { privileges: "select, insert" })}
grant usage on sequence schema_changes_id_seq to ${TENANT_ROLE};

-- the latest scan's progress, so whichever replica is asked can report it
create table schema_scans (
  connection_id text primary key references connections (id) on delete cascade,
  org_id text not null,
  state text not null check (state in ('running', 'done', 'failed')),
  phase text,
  tables_done integer not null default 0,
  tables_total integer,
  started_at timestamptz not null,
  finished_at timestamptz,
  error text,
  version integer,
  changed boolean
);
${isolateByOrg("schema_scans", { privileges: "select, insert, update" })}
`)
)
