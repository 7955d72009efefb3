import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- What retention has deleted of an ended run's evidence: its tasks' files but their transcripts
-- ('artifacts': past an organization's newest 10 ended runs), or those too ('transcripts': past
-- its newest 100). run.json, the run's row and its tasks' verdicts are kept.
alter table eval_runs add column evidence_pruned text check (evidence_pruned in ('artifacts', 'transcripts'));
create index eval_runs_retention_idx on eval_runs (org_id, created_at desc, id desc) where status in ('completed', 'failed', 'cancelled');
`)
)
