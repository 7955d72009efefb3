import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

// A deleted key's hash and org, so a request that still sends it is audited under that org.
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
create table api_key_tombstones (
  key_hash text primary key check (key_hash ~ '^[0-9a-f]{64}$'),
  org_id text not null references organizations (id) on delete cascade,
  deleted_at timestamptz not null default now()
);
${isolateByOrg("api_key_tombstones", { privileges: "select, insert" })}
`)
)
