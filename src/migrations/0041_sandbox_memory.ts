import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- A sandbox's own memory limit in MiB (an evaluation task's script: SP_EVAL_MEMORY_LIMIT); null,
-- the gateway's sandboxes' limit.
alter table sandboxes add column memory_mb int;
`)
)
