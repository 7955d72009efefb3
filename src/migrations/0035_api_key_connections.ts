import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- A key limited to some of its org's connections (an evaluation task's key: the run's pinned
-- connection); null, every connection of its org.
alter table api_keys add column connections text[];
`)
)
