import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
create table secrets (
  org_id text not null,
  -- '' for the organization's own secret, else the user it belongs to
  user_id text not null default '',
  name text not null,
  -- encrypted with the credential cipher, bound to org, user and name
  ciphertext text not null,
  updated_by text,
  updated_at timestamptz not null default date_trunc('milliseconds', now()),
  primary key (org_id, user_id, name)
);
${isolateByOrg("secrets", { privileges: "select, insert, update, delete" })}
`)
)
