import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg, TENANT_ROLE } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
create table schema_watches (
  id text primary key,
  org_id text not null,
  connection_id text not null references connections (id) on delete cascade,
  name text not null,
  -- globs over schema.table (or a schema); empty watches the whole connection
  tables text[] not null default '{}',
  interval_seconds integer not null check (interval_seconds between 60 and 86400),
  enabled boolean not null default true,
  -- the snapshot version the last run saw; changes after it are the next run's events
  last_version integer,
  last_run_at timestamptz,
  last_error text,
  created_by text,
  created_at timestamptz not null default date_trunc('milliseconds', now())
);
create index schema_watches_org_idx on schema_watches (org_id);
${isolateByOrg("schema_watches", { privileges: "select, insert, update, delete" })}

create table schema_watch_events (
  id bigserial primary key,
  org_id text not null,
  watch_id text not null references schema_watches (id) on delete cascade,
  detected_at timestamptz not null default date_trunc('milliseconds', now()),
  from_version integer,
  to_version integer not null,
  diff jsonb not null
);
create index schema_watch_events_watch_idx on schema_watch_events (watch_id, id desc);
${isolateByOrg("schema_watch_events", { privileges: "select, insert" })}
grant usage on sequence schema_watch_events_id_seq to ${TENANT_ROLE};
`)
)
