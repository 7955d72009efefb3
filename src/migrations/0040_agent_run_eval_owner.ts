import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- The evaluation run an agent run is a task of: it is the evaluation's, served to its staff alone
-- (not listed with the organization's agent runs, nor read or cancelled by any other member).
alter table agent_runs add column eval_run_id text;
`)
)
