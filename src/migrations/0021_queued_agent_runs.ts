import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- The job starter looks for runs still queued a while after their row committed: few rows, looked for every few seconds.
create index agent_runs_queued_idx on agent_runs (created_at) where status = 'queued';
`)
)
