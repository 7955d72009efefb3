import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Workspace projects: a bare git repository each (under SP_REPOS_DIR, named by the id), cloned and
-- pushed over the gateway's git endpoint; the row is its record and its branch rules.
create table workspace_projects (
  id text primary key,
  org_id text not null,
  name text not null,
  display_name text not null,
  description text not null default '',
  -- 'managed', or the remote URL the repository mirrors
  source text not null,
  connection_name text,
  default_branch text not null,
  protected_branches text[] not null default '{}',
  tags text[] not null default '{}',
  status text not null check (status in ('active', 'archived')),
  created_by text not null,
  updated_by text not null,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now()),
  unique (org_id, name)
);
create index workspace_projects_org_idx on workspace_projects (org_id, created_at desc, id desc);
${isolateByOrg("workspace_projects", { privileges: "select, insert, update, delete" })}
`)
)
