import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { type AccuracyRecord, RecordedTask, RunChange } from "../domain/EvalAccuracy"
import { EvalCoverage } from "../domain/EvalCoverage"
import { RegressionCheck, TRAILING_RUNS } from "../domain/EvalRegression"
import { OrgId } from "../domain/Ids"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const Json = <A, I>(schema: Schema.Schema<A, I>) => Schema.parseJson(schema)
const RecordRow = Schema.Struct({
  run_id: Schema.String,
  finished_at: Schema.DateFromSelf,
  eval_set_ref: Schema.String,
  build_fingerprint: Schema.String,
  task_set: Schema.String,
  trigger: Schema.String,
  accuracy: Schema.NullOr(Schema.Number),
  coverage: Schema.NullOr(Json(EvalCoverage)),
  knowledge: Json(Schema.Array(Schema.String)),
  model: Schema.NullOr(Schema.String),
  preamble_sha256: Schema.String,
  connection_name: Schema.String,
  max_tasks: Schema.Int,
  attempts: Schema.Int,
  tasks: Json(Schema.Array(RecordedTask)),
  comparison: Schema.NullOr(Json(RegressionCheck)),
  changes: Json(Schema.Array(RunChange)),
  regressed: Schema.Boolean
})
const records = Schema.decodeUnknown(Schema.Array(RecordRow))
// jsonb columns as text, so one decoder reads them whatever the driver makes of json.
const COLUMNS = `run_id, finished_at, eval_set_ref, build_fingerprint, task_set, trigger, accuracy, coverage::text as coverage, knowledge::text as knowledge, model, preamble_sha256,
  connection_name, max_tasks, attempts, tasks::text as tasks, comparison::text as comparison, changes::text as changes, regressed`

/** Evaluation runs' permanent accuracy records, and the regressions among them. */
export class EvalAccuracyRepo extends Effect.Service<EvalAccuracyRepo>()("sluice/EvalAccuracyRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("evaluation accuracy")

    /**
     * Appends the record `make` builds from the trailing comparable records (same set ref,
     * fingerprint and tasks, finished before `finishedAt`, newest first; a proposal's evaluation is no
     * baseline: its knowledge was never live), once per run. Appends of comparable runs take turns,
     * so of two runs ending at once the second is compared with the first.
     */
    const append = Effect.fn("EvalAccuracyRepo.append")(
      (
        orgId: OrgId,
        comparable: { readonly ref: string; readonly fingerprint: string; readonly taskSet: string; readonly finishedAt: Date },
        make: (trailing: ReadonlyArray<AccuracyRecord>) => AccuracyRecord
      ) =>
        Effect.gen(function* () {
          yield* sql`select pg_advisory_xact_lock(hashtextextended(${`eval_accuracy/${orgId}/${comparable.ref}/${comparable.fingerprint}/${comparable.taskSet}`}, 0))`
          const trailing = yield* sql`select ${sql.unsafe(COLUMNS)} from eval_accuracy_records
            where org_id = ${orgId} and eval_set_ref = ${comparable.ref} and build_fingerprint = ${comparable.fingerprint} and task_set = ${comparable.taskSet}
              and trigger <> 'evaluate_change' and finished_at < ${comparable.finishedAt}
            order by finished_at desc, run_id desc limit ${TRAILING_RUNS}`.pipe(Effect.flatMap(records))
          const record = make(trailing)
          const rows = yield* sql`insert into eval_accuracy_records ${sql.insert({
            run_id: record.run_id,
            org_id: orgId,
            finished_at: record.finished_at,
            eval_set_ref: record.eval_set_ref,
            build_fingerprint: record.build_fingerprint,
            task_set: record.task_set,
            trigger: record.trigger,
            accuracy: record.accuracy,
            coverage: record.coverage === null ? null : JSON.stringify(record.coverage),
            knowledge: JSON.stringify(record.knowledge),
            model: record.model,
            preamble_sha256: record.preamble_sha256,
            connection_name: record.connection_name,
            max_tasks: record.max_tasks,
            attempts: record.attempts,
            tasks: JSON.stringify(record.tasks),
            comparison: record.comparison === null ? null : JSON.stringify(record.comparison),
            changes: JSON.stringify(record.changes),
            regressed: record.regressed
          })} on conflict (run_id) do nothing returning run_id`
          return rows.length > 0 ? record : null
        }).pipe(withOrg(orgId)),
      failures
    )

    /** The organization's records, newest first, before the cursor's (finished_at, run_id). */
    const page = Effect.fn("EvalAccuracyRepo.page")(
      (orgId: OrgId, before: readonly [string, string] | null, limit: number) =>
        (before === null
          ? sql`select ${sql.unsafe(COLUMNS)} from eval_accuracy_records where org_id = ${orgId} order by finished_at desc, run_id desc limit ${limit}`
          : sql`select ${sql.unsafe(COLUMNS)} from eval_accuracy_records where org_id = ${orgId} and (finished_at, run_id) < (${before[0]}::timestamptz, ${before[1]})
              order by finished_at desc, run_id desc limit ${limit}`
        ).pipe(Effect.flatMap(records), withOrg(orgId)),
      failures
    )

    /** The newest records that regressed. */
    const regressions = Effect.fn("EvalAccuracyRepo.regressions")(
      (orgId: OrgId, limit: number) =>
        sql`select ${sql.unsafe(COLUMNS)} from eval_accuracy_records where org_id = ${orgId} and regressed order by finished_at desc, run_id desc limit ${limit}`.pipe(
          Effect.flatMap(records),
          withOrg(orgId)
        ),
      failures
    )

    /** System lookup across orgs: completed runs of the last `days` graded against a known warehouse that have no record. */
    const unrecorded = Effect.fn("EvalAccuracyRepo.unrecorded")(
      (days: number) =>
        sql`select id, org_id from eval_runs r where status = 'completed' and build_fingerprint <> '' and ended_at > now() - make_interval(days => ${days})
            and not exists (select 1 from eval_accuracy_records a where a.run_id = r.id) order by ended_at limit 100`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String, org_id: OrgId }))))
        ),
      failures
    )

    return { append, page, regressions, unrecorded } as const
  })
}) {}
