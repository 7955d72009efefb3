import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Whether a run may ask its user a question: not an evaluation task's agent, which no person
-- answers (and which an org member must not be able to steer).
alter table agent_runs add column interactive boolean not null default true;
`)
)
