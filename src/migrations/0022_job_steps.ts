import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- The steps of durable jobs as the job kit runs them: one runner at a time runs a step (its claim
-- kept fresh while it runs), and a step's result is kept once done, so a step whose job moved to
-- another runner mid-flight is waited for there, not run a second time. System rows: no tenant reads them.
create table job_steps (
  job_id text not null,
  step text not null,
  runner text not null,
  heartbeat_at timestamptz not null default now(),
  done_at timestamptz,
  -- JSON as text: jsonb refuses some strings a step can return (a lone surrogate, an escaped NUL)
  result text,
  primary key (job_id, step)
);
`)
)
