import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
create table session_budgets (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  -- applies to every query of this key, or to every query that names this session
  key_id text,
  session text,
  max_queries bigint,
  max_rows bigint,
  max_bytes_scanned bigint,
  max_cost double precision,
  max_duration_ms double precision,
  used_queries bigint not null default 0,
  used_rows bigint not null default 0,
  used_bytes_scanned bigint not null default 0,
  used_cost double precision not null default 0,
  used_duration_ms double precision not null default 0,
  expires_at timestamptz,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  check (key_id is not null or session is not null)
);
create index session_budgets_key_idx on session_budgets (org_id, key_id);
create unique index session_budgets_session_idx on session_budgets (org_id, session) where session is not null;
${isolateByOrg("session_budgets", { privileges: "select, insert, update, delete" })}
`)
)
