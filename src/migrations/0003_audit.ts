import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
create table gateway_audit_logs (
  id bigserial primary key,
  "timestamp" bigint not null,
  org_id text,
  principal text,
  key_id text,
  user_id text,
  event_type text not null,
  method text,
  route text not null,
  status integer,
  connection text,
  sql text,
  outcome text not null check (outcome in ('success', 'refused', 'error')),
  block_reason text,
  rows integer,
  duration_ms double precision not null,
  client_ip text,
  user_agent text,
  request_id text not null
);
create index gateway_audit_logs_org_idx on gateway_audit_logs (org_id, id desc);
create index gateway_audit_logs_org_time_idx on gateway_audit_logs (org_id, "timestamp");
${isolateByOrg("gateway_audit_logs", { privileges: "select" })}
`)
)
