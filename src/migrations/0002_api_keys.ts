import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
create table api_keys (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  user_id text not null references users (id),
  name text not null check (char_length(name) between 1 and 64),
  key_hash text not null unique check (key_hash ~ '^[0-9a-f]{64}$'),
  prefix text not null,
  scopes text[] not null check (cardinality(scopes) > 0),
  kind text not null default 'user' check (kind in ('user', 'local')),
  -- millisecond precision so the (created_at, id) page cursor round-trips through JSON exactly
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  last_used_at timestamptz,
  expires_at timestamptz
);
create unique index api_keys_org_name_idx on api_keys (org_id, name);
create index api_keys_org_created_idx on api_keys (org_id, created_at desc, id desc);
${isolateByOrg("api_keys", { privileges: "select, insert, update, delete" })}
`)
)
