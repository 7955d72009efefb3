import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- An organization's evaluation settings: the pinned connection, where its eval set is (a folder of a
-- workspace project's repository, or an uploaded archive), the runner profile tasks' scripts run in
-- (the deployment's, never the set's), who hears of regressions, and the run defaults.
create table eval_configs (
  org_id text primary key,
  connection_name text,
  eval_set jsonb,
  runner_profile text,
  notify_emails jsonb not null default '[]',
  prompt_preamble text not null default '',
  max_tasks int not null default 50 check (max_tasks between 1 and 200),
  model text,
  autorun boolean not null default false,
  updated_by text not null,
  updated_at timestamptz not null default date_trunc('milliseconds', now())
);
${isolateByOrg("eval_configs", { privileges: "select, insert, update" })}
`)
)
