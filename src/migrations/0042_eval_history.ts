import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- One permanent record per completed evaluation run: what it scored, against which set and
-- warehouse, with what (knowledge entries live, model, preamble, connection, task cap), its tasks'
-- outcomes, and how it compared with the trailing comparable runs (same set ref, fingerprint and
-- tasks: task_set is a digest of the task ids it ran).
-- Written once, never updated, never pruned.
create table eval_accuracy_records (
  run_id text primary key,
  org_id text not null,
  finished_at timestamptz not null,
  eval_set_ref text not null,
  build_fingerprint text not null,
  task_set text not null,
  trigger text not null,
  accuracy float8,
  coverage jsonb,
  knowledge jsonb not null,
  model text,
  preamble_sha256 text not null,
  connection_name text not null,
  max_tasks int not null,
  attempts int not null,
  tasks jsonb not null,
  comparison jsonb,
  changes jsonb not null,
  regressed boolean not null
);
create index eval_accuracy_records_comparable on eval_accuracy_records (org_id, eval_set_ref, build_fingerprint, task_set, finished_at desc);
create index eval_accuracy_records_history on eval_accuracy_records (org_id, finished_at desc, run_id desc);
${isolateByOrg("eval_accuracy_records", { privileges: "select, insert" })}

-- How many times a run attempts each task (1-5); who autoruns act as (the staff member who turned
-- autorun on).
alter table eval_configs add column attempts int not null default 1,
  add column autorun_user_id text,
  add column autorun_principal_kind text check (autorun_principal_kind in ('api_key', 'jwt', 'local')),
  add column autorun_key_id text;

-- The key a task held, kept after it is revoked: its queries in the audit log are the run's
-- observed coverage. A run's coverage of its set's dbt project.
alter table eval_run_tasks add column audit_key_id text;
alter table eval_runs add column coverage jsonb;

-- What started a run: a person in the web app, the API, a knowledge change (autorun), or a
-- proposal evaluated on the live base.
alter table eval_runs drop constraint eval_runs_trigger_check;
alter table eval_runs add constraint eval_runs_trigger_check check (trigger in ('manual', 'api', 'knowledge_change', 'evaluate_change'));

-- A knowledge change waiting to autorun the organization's evaluation: one row per organization,
-- due 2 minutes after the first change it holds; the changes until then join it.
create table eval_autorun_requests (
  org_id text primary key,
  due_at timestamptz not null,
  entries jsonb not null
);
${isolateByOrg("eval_autorun_requests", { privileges: "select, insert, update, delete" })}
`)
)
