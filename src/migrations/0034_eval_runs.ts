import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Evaluation runs, durable jobs of kind 'eval_run': a set's tasks given to the built-in agent and
-- graded. A running run holds a lease its runner renews every 45 s; the reaper fails a run whose
-- lease has expired (180 s without a renewal), revokes its tasks' keys and frees their branches.
create table eval_runs (
  id text primary key,
  org_id text not null,
  user_id text not null,
  principal_kind text not null check (principal_kind in ('api_key', 'jwt', 'local')),
  key_id text,
  status text not null check (status in ('queued', 'running', 'completed', 'failed', 'cancelled')),
  trigger text not null check (trigger in ('api')),
  eval_set_ref text not null,
  eval_set_source jsonb not null,
  build_fingerprint text not null,
  settings jsonb not null,
  total integer not null default 0,
  done integer not null default 0,
  verdicts jsonb not null default '{"CORRECT": 0, "PARTIAL": 0, "WRONG": 0, "ERROR": 0, "UNGRADED": 0}',
  accuracy double precision,
  error_code text,
  error_message text,
  -- the gateway process that took the start: at most two in flight per process
  started_on text not null,
  lease_expires_at timestamptz,
  cancel_requested boolean not null default false,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  started_at timestamptz,
  ended_at timestamptz
);
create index eval_runs_org_idx on eval_runs (org_id, created_at desc, id desc);
create index eval_runs_queued_idx on eval_runs (created_at) where status = 'queued';
create index eval_runs_in_flight_idx on eval_runs (started_on) where status in ('queued', 'running');
create index eval_runs_lease_idx on eval_runs (lease_expires_at) where status = 'running';
${isolateByOrg("eval_runs", { privileges: "select, insert, update" })}

create table eval_run_tasks (
  run_id text not null references eval_runs (id) on delete cascade,
  org_id text not null,
  task_id text not null,
  ordinal integer not null,
  class text not null check (class in ('read', 'write')),
  phase text not null check (phase in ('pending', 'provisioning', 'setup', 'agent', 'grading', 'capture', 'teardown', 'done')),
  verdict text check (verdict in ('CORRECT', 'PARTIAL', 'WRONG', 'ERROR', 'UNGRADED')),
  checks jsonb not null default '[]',
  detail text,
  -- the task's own key (read + query), revoked when the task ends or its run is reaped
  key_id text,
  agent_run_id text,
  started_at timestamptz,
  ended_at timestamptz,
  primary key (run_id, task_id)
);
create index eval_run_tasks_keys_idx on eval_run_tasks (run_id) where key_id is not null;
${isolateByOrg("eval_run_tasks", { privileges: "select, insert, update" })}

create function eval_run_events_gone() returns trigger
language plpgsql security definer set search_path from current as $$
begin
  delete from job_events where kind = 'eval_run' and job_id = old.id;
  return old;
end
$$;
create trigger eval_run_events_gone after delete on eval_runs for each row execute function eval_run_events_gone();
`)
)
