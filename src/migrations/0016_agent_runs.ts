import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
create table agent_runs (
  id text primary key,
  org_id text not null,
  user_id text not null,
  -- what the run acts with, checked again at every step: the key, or the session user's membership
  principal_kind text not null check (principal_kind in ('api_key', 'jwt', 'local')),
  key_id text,
  prompt text not null,
  connection_name text,
  status text not null check (status in ('queued', 'running', 'waiting_for_user', 'waiting_for_query_approval', 'completed', 'failed', 'cancelled')),
  model text,
  max_turns integer not null check (max_turns between 1 and 200),
  turns integer not null default 0,
  input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  cost_usd numeric(14, 6) not null default 0,
  answer text,
  error_code text,
  error_message text,
  -- what the run waits for (a question to the user, a query to approve)
  pending jsonb,
  cancel_requested boolean not null default false,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now()),
  finished_at timestamptz
);
create index agent_runs_org_idx on agent_runs (org_id, created_at desc, id desc);
${isolateByOrg("agent_runs", { privileges: "select, insert, update" })}

-- What a run did, in order: each written once by the workflow step it belongs to, so a replayed step adds nothing.
create table agent_run_events (
  run_id text not null references agent_runs (id) on delete cascade,
  org_id text not null,
  seq integer not null,
  step text not null,
  type text not null,
  data jsonb not null,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  primary key (run_id, seq),
  unique (run_id, step)
);
${isolateByOrg("agent_run_events", { privileges: "select, insert" })}
`)
)
