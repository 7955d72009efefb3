import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- A conversation is a thread of agent runs: each user message starts one, its answer is the run's.
create table chat_conversations (
  id text primary key,
  org_id text not null,
  user_id text not null,
  -- null: named by its first message
  title text,
  connection_name text,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now())
);
create index chat_conversations_org_idx on chat_conversations (org_id, updated_at desc, id desc);
${isolateByOrg("chat_conversations", { privileges: "select, insert, update" })}

alter table agent_runs add column conversation_id text references chat_conversations (id) on delete cascade;
create index agent_runs_conversation_idx on agent_runs (conversation_id, created_at) where conversation_id is not null;
-- One run at a time per conversation, held by the store itself (two messages posted at once cannot both start one).
create unique index agent_runs_one_active_per_conversation on agent_runs (conversation_id)
  where conversation_id is not null and status in ('queued', 'running', 'waiting_for_user', 'waiting_for_query_approval');

-- Analysis trails: from a query id (in a result, a tool's output, a run's events) back to its audit row.
create index gateway_audit_logs_query_id_idx on gateway_audit_logs (org_id, (details->>'query_id')) where details ? 'query_id';
`)
)
