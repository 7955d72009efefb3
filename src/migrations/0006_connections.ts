import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
create table connections (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  name text not null check (name ~ '^[A-Za-z0-9_-]{1,64}$'),
  db_type text not null,
  description text,
  tags text[] not null default '{}',
  -- every non-secret field of the connection, as the API accepted it
  settings jsonb not null,
  -- one AES-256-GCM ciphertext of the JSON object of its secrets, bound to org and id
  secrets text,
  -- which secrets are set (paths such as password or ssh_tunnel.private_key), so reads need no decryption
  secret_paths text[] not null default '{}',
  -- bumped on every change that could alter how to connect, so pools keyed by it are replaced
  version integer not null default 1,
  host_key_fingerprint text,
  -- 'env' rows mirror SP_CONNECTION_<NAME> and are read-only through the API
  source text not null default 'api' check (source in ('api', 'env')),
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now())
);
create unique index connections_org_name_idx on connections (org_id, name);
${isolateByOrg("connections", { privileges: "select, insert, update, delete" })}

create table connection_health_events (
  id bigserial primary key,
  org_id text not null,
  connection_id text not null references connections (id) on delete cascade,
  checked_at timestamptz not null default now(),
  ok boolean not null,
  latency_ms double precision not null,
  step text,
  error text
);
create index connection_health_events_conn_idx on connection_health_events (connection_id, checked_at desc);
create index connection_health_events_time_idx on connection_health_events (checked_at);
${isolateByOrg("connection_health_events", { privileges: "select" })}
`)
)
