import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

// PII rules live apart from `settings` and `version`: changing them must not reopen pools.
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`alter table connections add column pii_rules jsonb not null default '[]', add column pii_version integer not null default 0`)
)
