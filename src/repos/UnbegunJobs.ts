import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { OrgId } from "../domain/Ids"

const JobOfOrg = Schema.Array(Schema.Struct({ id: Schema.String, org_id: OrgId }))

/**
 * System lookup across orgs, for the job starter: a kind's jobs still `queued` between `graceSeconds`
 * and `giveUpSeconds` after their row committed, oldest first (their workflow may never have started).
 * The table has `id`, `org_id`, `status` and `created_at`, and a partial index on `created_at where status = 'queued'`.
 */
export const unbegunJobs =
  (sql: SqlClient.SqlClient, table: "agent_runs" | "eval_runs") =>
  (graceSeconds: number, giveUpSeconds: number, limit: number) =>
    sql`select id, org_id from ${sql(table)}
      where status = 'queued' and created_at < now() - make_interval(secs => ${graceSeconds})
        and created_at >= now() - make_interval(secs => ${giveUpSeconds})
      order by created_at limit ${limit}`.pipe(Effect.flatMap(Schema.decodeUnknown(JobOfOrg)))
