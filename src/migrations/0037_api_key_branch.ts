import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- A key that may write in one database branch of its one connection (an evaluation write task's
-- key: its task's branch), as the branch's own role; null, none.
alter table api_keys add column branch_project text, add column branch_name text;
-- A write task's branch, named as it was made: what its teardown deletes.
alter table eval_run_tasks add column branch_name text;
`)
)
