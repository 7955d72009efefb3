import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- what people (and the annotation generator) say about a table or column, over what scans find
create table schema_notes (
  org_id text not null,
  connection_id text not null references connections (id) on delete cascade,
  schema_name text not null,
  table_name text not null,
  -- '' for the table itself
  column_name text not null default '',
  description text,
  description_source text check (description_source in ('manual', 'generated')),
  type_override text,
  endorsement text check (endorsement in ('trusted', 'deprecated')),
  endorsement_note text,
  updated_by text,
  updated_at timestamptz not null default date_trunc('milliseconds', now()),
  primary key (connection_id, schema_name, table_name, column_name)
);
create index schema_notes_org_idx on schema_notes (org_id);
${isolateByOrg("schema_notes", { privileges: "select, insert, update, delete" })}

create table semantic_models (
  connection_id text primary key references connections (id) on delete cascade,
  org_id text not null,
  model jsonb not null,
  version integer not null default 1,
  source text not null check (source in ('manual', 'generated')),
  updated_by text,
  updated_at timestamptz not null default date_trunc('milliseconds', now())
);
${isolateByOrg("semantic_models", { privileges: "select, insert, update" })}
`)
)
