import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Knowledge entries a key is served as if they were approved (an evaluation task's key: its run's
-- doc_ids, proposals overlaid on the live base); null, none.
alter table api_keys add column knowledge_overlay text[];
`)
)
