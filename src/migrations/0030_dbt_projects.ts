import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- dbt projects the gateway scans: a folder under SP_PROJECT_ROOTS (self-hosted) or a workspace
-- project's repository; the last scan (models by layer, sources, tests, lineage) is kept whole.
create table dbt_projects (
  org_id text not null,
  name text not null,
  source text not null check (source in ('directory', 'workspace')),
  path text,
  workspace_project_id text,
  subdirectory text not null default '',
  description text not null default '',
  connection_name text,
  scan jsonb,
  scanned_at timestamptz,
  scan_error text,
  created_by text not null,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now()),
  primary key (org_id, name),
  check ((source = 'directory') = (path is not null)),
  check ((source = 'workspace') = (workspace_project_id is not null))
);
${isolateByOrg("dbt_projects", { privileges: "select, insert, update, delete" })}
`)
)
