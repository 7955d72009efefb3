import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Reports and dashboards people share: a self-contained HTML document and, optionally, its data.
create table reports (
  id text primary key,
  org_id text not null,
  title text not null,
  kind text not null check (kind in ('report', 'dashboard')),
  html text not null,
  -- its JSON as text: any JSON the client sent (jsonb refuses some, such as an escaped NUL)
  data text,
  bytes integer not null,
  view_count integer not null default 0,
  created_by text not null,
  updated_by text not null,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now())
);
create index reports_org_idx on reports (org_id, updated_at desc, id desc);
${isolateByOrg("reports", { privileges: "select, insert, update, delete" })}
`)
)
