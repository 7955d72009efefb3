import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Database branches: a disposable copy of a connection's database (a template copy on its own
-- PostgreSQL server, or a hosted branching service's branch), grouped by project, owned by a role
-- of its own that is no superuser; the dbt proxy builds into them. A job's branches carry its id and
-- a lease: the reaper deletes them once the lease runs out or the job has ended.
create table db_branches (
  id text primary key,
  org_id text not null,
  connection_name text not null,
  project text not null,
  name text not null,
  parent text not null,
  provider text not null check (provider in ('postgres_template', 'hosted')),
  database_name text not null,
  owner_role text not null,
  -- the owner role's password, encrypted like connection credentials
  owner_secret text not null,
  status text not null check (status in ('creating', 'ready', 'deleting')),
  -- what making the copy governed did: relations dropped (blocked), tables whose PII columns were masked
  governance jsonb,
  owner_job text,
  lease_expires_at timestamptz,
  created_by text not null,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  unique (org_id, connection_name, project, name)
);
create index db_branches_lease_idx on db_branches (lease_expires_at) where lease_expires_at is not null;
create index db_branches_job_idx on db_branches (owner_job) where owner_job is not null;
${isolateByOrg("db_branches", { privileges: "select, insert, update, delete" })}
`)
)
