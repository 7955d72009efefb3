import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Notebook sessions: a Jupyter server per user, run by one gateway process, proxied at /notebook/{id}/.
create table notebook_sessions (
  id text primary key,
  org_id text not null,
  user_id text not null,
  principal_kind text not null check (principal_kind in ('api_key', 'jwt', 'local')),
  key_id text,
  created_by text not null,
  scopes text[] not null,
  connection_name text,
  status text not null check (status in ('starting', 'running', 'stopped', 'error')),
  error text,
  host text,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  last_activity_at timestamptz not null default date_trunc('milliseconds', now()),
  stopped_at timestamptz
);
-- One active session per user of an org, across replicas.
create unique index notebook_sessions_active_idx on notebook_sessions (org_id, user_id) where status in ('starting', 'running');
create index notebook_sessions_host_idx on notebook_sessions (host) where status in ('starting', 'running');
${isolateByOrg("notebook_sessions", { privileges: "select, insert, update, delete" })}
`)
)
