import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { EvalSetSource } from "../domain/EvalConfig"
import { attemptOf, EVAL_RUN_KIND, EvalRunTrigger, type EvalRun, EvalRunSettings, EvalRunStatus, type EvalRunTask, TaskPhase, Verdict, VerdictCounts } from "../domain/EvalRun"
import { EvalCoverage } from "../domain/EvalCoverage"
import { KeyId, OrgId, UserId } from "../domain/Ids"
import { appendJobEvent } from "./JobEventsRepo"
import { storeErrors } from "./StoreErrors"
import { unbegunJobs } from "./UnbegunJobs"
import { tenantScope } from "./Tenant"

const Json = <A, I>(schema: Schema.Schema<A, I>) => Schema.parseJson(schema)
const RunRow = Schema.Struct({
  id: Schema.String,
  org_id: OrgId,
  user_id: UserId,
  principal_kind: Schema.Literal("api_key", "jwt", "local"),
  key_id: Schema.NullOr(KeyId),
  status: EvalRunStatus,
  trigger: EvalRunTrigger,
  eval_set_ref: Schema.String,
  eval_set_source: Json(EvalSetSource),
  build_fingerprint: Schema.String,
  settings: Json(EvalRunSettings),
  total: Schema.Int,
  done: Schema.Int,
  verdicts: Json(VerdictCounts),
  accuracy: Schema.NullOr(Schema.Number),
  error_code: Schema.NullOr(Schema.String),
  error_message: Schema.NullOr(Schema.String),
  cancel_requested: Schema.Boolean,
  created_at: Schema.DateFromSelf,
  started_at: Schema.NullOr(Schema.DateFromSelf),
  ended_at: Schema.NullOr(Schema.DateFromSelf),
  lease_expires_at: Schema.NullOr(Schema.DateFromSelf),
  evidence_pruned: Schema.NullOr(Schema.Literal("artifacts", "transcripts")),
  coverage: Schema.NullOr(Json(EvalCoverage))
})
type RunRow = typeof RunRow.Type
// jsonb columns as text, so one decoder reads them whatever the driver makes of json.
const RUN_COLUMNS = `id, org_id, user_id, principal_kind, key_id, status, trigger, eval_set_ref, eval_set_source::text as eval_set_source,
  build_fingerprint, settings::text as settings, total, done, verdicts::text as verdicts, accuracy, error_code, error_message,
  cancel_requested, created_at, started_at, ended_at, lease_expires_at, evidence_pruned, coverage::text as coverage`

const CheckResults = Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String, score: Schema.NullOr(Schema.Number), passed: Schema.Boolean, pass_mark: Schema.Number, detail: Schema.String }))
const TaskRow = Schema.Struct({
  task_id: Schema.String,
  ordinal: Schema.Int,
  class: Schema.Literal("read", "write"),
  phase: TaskPhase,
  verdict: Schema.NullOr(Verdict),
  checks: Json(CheckResults),
  detail: Schema.NullOr(Schema.String),
  key_id: Schema.NullOr(KeyId),
  agent_run_id: Schema.NullOr(Schema.String),
  branch_name: Schema.NullOr(Schema.String),
  started_at: Schema.NullOr(Schema.DateFromSelf),
  ended_at: Schema.NullOr(Schema.DateFromSelf)
})
export type EvalTaskRow = typeof TaskRow.Type
const TASK_COLUMNS = "task_id, ordinal, class, phase, verdict, checks::text as checks, detail, key_id, agent_run_id, branch_name, started_at, ended_at"

/** A run as shown, and who it acts as. */
export interface StoredEvalRun {
  readonly run: EvalRun
  readonly orgId: OrgId
  readonly userId: UserId
  readonly principalKind: RunRow["principal_kind"]
  readonly keyId: KeyId | null
  readonly cancelRequested: boolean
  readonly source: EvalSetSource
}

const storedRun = (row: RunRow): StoredEvalRun => ({
  orgId: row.org_id,
  userId: row.user_id,
  principalKind: row.principal_kind,
  keyId: row.key_id,
  cancelRequested: row.cancel_requested,
  source: row.eval_set_source,
  run: {
    id: row.id,
    status: row.status,
    trigger: row.trigger,
    eval_set_ref: row.eval_set_ref,
    build_fingerprint: row.build_fingerprint,
    settings: row.settings,
    total: row.total,
    done: row.done,
    verdicts: row.verdicts,
    accuracy: row.accuracy,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? "" },
    created_by: row.user_id,
    created_at: row.created_at,
    started_at: row.started_at,
    ended_at: row.ended_at,
    lease_expires_at: row.lease_expires_at,
    evidence_pruned: row.evidence_pruned,
    coverage: row.coverage
  }
})

export const shownTask = (row: EvalTaskRow): EvalRunTask => ({
  task_id: row.task_id,
  attempt: attemptOf(row.task_id).attempt,
  class: row.class,
  phase: row.phase,
  verdict: row.verdict,
  checks: row.checks,
  detail: row.detail,
  agent_run_id: row.agent_run_id,
  started_at: row.started_at,
  ended_at: row.ended_at
})

export interface NewEvalRun {
  readonly id: string
  readonly org_id: OrgId
  readonly user_id: UserId
  readonly principal_kind: RunRow["principal_kind"]
  readonly key_id: KeyId | null
  readonly eval_set_ref: string
  readonly eval_set_source: EvalSetSource
  readonly build_fingerprint: string
  readonly trigger: EvalRunTrigger
  readonly settings: EvalRunSettings
  readonly total: number
  readonly started_on: string
}

const RunOfOrg = Schema.Struct({ id: Schema.String, org_id: OrgId })

/** Evaluation runs and their tasks, per org; the lease, start and in-flight queries across orgs are the system's. */
export class EvalRunsRepo extends Effect.Service<EvalRunsRepo>()("sluice/EvalRunsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("eval runs store")
    const runRows = Schema.decodeUnknown(Schema.Array(RunRow))
    const taskRows = Schema.decodeUnknown(Schema.Array(TaskRow))

    const insert = Effect.fn("EvalRunsRepo.insert")(
      (row: NewEvalRun, tasks: ReadonlyArray<{ readonly task_id: string; readonly class: "read" | "write" }>) =>
        Effect.gen(function* () {
          yield* sql`insert into eval_runs ${sql.insert({
            ...row,
            eval_set_source: JSON.stringify(row.eval_set_source),
            settings: JSON.stringify(row.settings),
            status: "queued"
          })}`
          if (tasks.length > 0) {
            yield* sql`insert into eval_run_tasks ${sql.insert(tasks.map((task, ordinal) => ({ run_id: row.id, org_id: row.org_id, task_id: task.task_id, ordinal, class: task.class, phase: "pending" })))}`
          }
        }).pipe(withOrg(row.org_id)),
      failures
    )

    /** System count: runs that have not ended, started or resumed on this process (`started_on`, moved by holdLease). */
    const inFlightOn = Effect.fn("EvalRunsRepo.inFlightOn")(
      (startedOn: string) =>
        sql<{ n: number }>`select count(*)::int as n from eval_runs where started_on = ${startedOn} and status in ('queued', 'running')`.pipe(Effect.map((rows) => rows[0]?.n ?? 0)),
      failures
    )

    const find = Effect.fn("EvalRunsRepo.find")(
      (orgId: OrgId, id: string) =>
        sql`select ${sql.unsafe(RUN_COLUMNS)} from eval_runs where org_id = ${orgId} and id = ${id}`.pipe(
          Effect.flatMap(runRows),
          Effect.map((rows) => (rows[0] === undefined ? null : storedRun(rows[0]))),
          withOrg(orgId)
        ),
      failures
    )

    /** Newest first, after the (created_at, id) of the last one seen. */
    const page = Effect.fn("EvalRunsRepo.page")(
      (orgId: OrgId, before: readonly [string, string] | null, limit: number) =>
        (before === null
          ? sql`select ${sql.unsafe(RUN_COLUMNS)} from eval_runs where org_id = ${orgId} order by created_at desc, id desc limit ${limit}`
          : sql`select ${sql.unsafe(RUN_COLUMNS)} from eval_runs where org_id = ${orgId} and (created_at, id) < (${before[0]}::timestamptz, ${before[1]})
              order by created_at desc, id desc limit ${limit}`
        ).pipe(Effect.flatMap(runRows), Effect.map((rows) => rows.map(storedRun)), withOrg(orgId)),
      failures
    )

    const tasks = Effect.fn("EvalRunsRepo.tasks")(
      (orgId: OrgId, runId: string) =>
        sql`select ${sql.unsafe(TASK_COLUMNS)} from eval_run_tasks where org_id = ${orgId} and run_id = ${runId} order by ordinal`.pipe(Effect.flatMap(taskRows), withOrg(orgId)),
      failures
    )

    const task = Effect.fn("EvalRunsRepo.task")(
      (orgId: OrgId, runId: string, taskId: string) =>
        sql`select ${sql.unsafe(TASK_COLUMNS)} from eval_run_tasks where org_id = ${orgId} and run_id = ${runId} and task_id = ${taskId}`.pipe(
          Effect.flatMap(taskRows),
          Effect.map((rows) => rows[0] ?? null),
          withOrg(orgId)
        ),
      failures
    )

    /**
     * Marks a queued run running (or renews a running one's lease) with a lease of `seconds`; false
     * when it has ended or its lease has expired: an expired lease is never taken up again. The run
     * counts from then on among the runs in flight of `runner`, the process running it (a run
     * resumed after a restart counts on the process that resumed it).
     */
    const holdLease = Effect.fn("EvalRunsRepo.holdLease")(
      (orgId: OrgId, id: string, seconds: number, runner: string) =>
        sql`update eval_runs set status = 'running', started_at = coalesce(started_at, date_trunc('milliseconds', now())),
            lease_expires_at = now() + make_interval(secs => ${seconds}), started_on = ${runner}
          where org_id = ${orgId} and id = ${id} and (status = 'queued' or (status = 'running' and lease_expires_at > now())) returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          withOrg(orgId)
        ),
      failures
    )

    /** Moves a task of a run that has not ended to `phase`, with what it holds from then on (its key, its agent run). */
    const setPhase = Effect.fn("EvalRunsRepo.setPhase")(
      (orgId: OrgId, runId: string, taskId: string, phase: TaskPhase, holds: { readonly key_id?: KeyId | null; readonly agent_run_id?: string; readonly branch_name?: string } = {}) =>
        sql`update eval_run_tasks t set phase = ${phase},
            started_at = coalesce(t.started_at, date_trunc('milliseconds', now())),
            key_id = ${holds.key_id === undefined ? sql`t.key_id` : sql`${holds.key_id}`},
            audit_key_id = coalesce(${holds.key_id ?? null}, t.audit_key_id),
            agent_run_id = coalesce(${holds.agent_run_id ?? null}, t.agent_run_id),
            branch_name = coalesce(${holds.branch_name ?? null}, t.branch_name)
          from eval_runs r
          where t.org_id = ${orgId} and t.run_id = ${runId} and t.task_id = ${taskId} and r.id = t.run_id and r.status in ('queued', 'running')
          returning t.task_id`.pipe(Effect.map((rows) => rows.length > 0), withOrg(orgId)),
      failures
    )

    const setVerdict = (orgId: OrgId, runId: string, taskId: string, graded: { readonly verdict: EvalRunTask["verdict"]; readonly checks: EvalRunTask["checks"]; readonly detail: string | null }) =>
      sql`update eval_run_tasks set verdict = ${graded.verdict}, checks = ${JSON.stringify(graded.checks)}::jsonb, detail = ${graded.detail}
        where org_id = ${orgId} and run_id = ${runId} and task_id = ${taskId}`

    /** The task's grade (first grading, or a regrade of a finished run). */
    const grade = Effect.fn("EvalRunsRepo.grade")(
      (orgId: OrgId, runId: string, taskId: string, graded: Parameters<typeof setVerdict>[3]) => setVerdict(orgId, runId, taskId, graded).pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    /** The task is done: its key forgotten (revoked by the caller), the run's count of done tasks brought up to date. */
    const taskDone = Effect.fn("EvalRunsRepo.taskDone")(
      (orgId: OrgId, runId: string, taskId: string) =>
        Effect.zipRight(
          sql`update eval_run_tasks set phase = 'done', key_id = null, ended_at = coalesce(ended_at, date_trunc('milliseconds', now()))
            where org_id = ${orgId} and run_id = ${runId} and task_id = ${taskId}`,
          sql`update eval_runs set done = (select count(*) from eval_run_tasks where run_id = ${runId} and phase = 'done') where org_id = ${orgId} and id = ${runId}`
        ).pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    // The run's verdict counts and accuracy from its tasks: CORRECT over every graded task (ERROR counts against it, UNGRADED is left out).
    const tally = (runId: string) => sql`
      verdicts = (select jsonb_build_object('CORRECT', count(*) filter (where verdict = 'CORRECT'), 'PARTIAL', count(*) filter (where verdict = 'PARTIAL'),
          'WRONG', count(*) filter (where verdict = 'WRONG'), 'ERROR', count(*) filter (where verdict = 'ERROR'), 'UNGRADED', count(*) filter (where verdict = 'UNGRADED'))
        from eval_run_tasks where run_id = ${runId}),
      accuracy = (select (count(*) filter (where verdict = 'CORRECT'))::float8 / nullif(count(*) filter (where verdict in ('CORRECT', 'PARTIAL', 'WRONG', 'ERROR')), 0)
        from eval_run_tasks where run_id = ${runId})`

    /** Ends a run once (one whose lease has expired, for the reaper): its status, its tally; false when it had ended (or its lease was renewed). */
    const finish = Effect.fn("EvalRunsRepo.finish")(
      (
        orgId: OrgId,
        id: string,
        outcome: { readonly status: "completed" | "failed" | "cancelled"; readonly error?: { readonly code: string; readonly message: string }; readonly leaseExpired?: boolean }
      ) =>
        sql`update eval_runs set status = ${outcome.status}, error_code = ${outcome.error?.code ?? null}, error_message = ${outcome.error?.message ?? null},
            lease_expires_at = null, ended_at = date_trunc('milliseconds', now()), ${tally(id)}
          where org_id = ${orgId} and id = ${id} and status in ('queued', 'running')
            ${outcome.leaseExpired === true ? sql`and lease_expires_at < now()` : sql``} returning id`.pipe(Effect.map((rows) => rows.length > 0), withOrg(orgId)),
      failures
    )

    /** After a regrade: the tally again from the tasks' new verdicts. */
    const retally = Effect.fn("EvalRunsRepo.retally")(
      (orgId: OrgId, id: string) => sql`update eval_runs set ${tally(id)} where org_id = ${orgId} and id = ${id}`.pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    /** The keys its tasks held (revoked or not): whose audit rows are the run's queries. */
    const auditKeyIds = Effect.fn("EvalRunsRepo.auditKeyIds")(
      (orgId: OrgId, runId: string) =>
        sql<{ key: string }>`select distinct audit_key_id as key from eval_run_tasks where org_id = ${orgId} and run_id = ${runId} and audit_key_id is not null`.pipe(
          Effect.map((rows) => rows.map((row) => row.key)),
          withOrg(orgId)
        ),
      failures
    )

    /** The run's coverage of its set's dbt project, as it ends. */
    const setCoverage = Effect.fn("EvalRunsRepo.setCoverage")(
      (orgId: OrgId, runId: string, coverage: EvalCoverage) =>
        sql`update eval_runs set coverage = ${JSON.stringify(coverage)}::jsonb where org_id = ${orgId} and id = ${runId}`.pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    /** Its tasks hold no key any more (revoked with the run). */
    const forgetKeys = Effect.fn("EvalRunsRepo.forgetKeys")(
      (orgId: OrgId, runId: string) =>
        sql`update eval_run_tasks set key_id = null where org_id = ${orgId} and run_id = ${runId} and key_id is not null`.pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    /** System lookup across orgs: running runs whose lease has expired. */
    const expired = Effect.fn("EvalRunsRepo.expired")(
      () => sql`select id, org_id from eval_runs where status = 'running' and lease_expires_at < now() order by lease_expires_at limit 100`.pipe(Effect.flatMap(Schema.decodeUnknown(Schema.Array(RunOfOrg)))),
      failures
    )

    /**
     * System lookup across orgs: ended runs whose evidence retention has yet to prune (past each
     * org's newest `keepArtifacts` ended runs, their tasks' files; past `keepTranscripts`, transcripts too), oldest first.
     */
    const dueForPruning = Effect.fn("EvalRunsRepo.dueForPruning")(
      (keepArtifacts: number, keepTranscripts: number) =>
        sql`select id, org_id, (rank > ${keepTranscripts}) as transcripts from (
              select id, org_id, evidence_pruned, created_at, row_number() over (partition by org_id order by created_at desc, id desc) as rank
              from eval_runs where status in ('completed', 'failed', 'cancelled')
            ) r
            where (rank > ${keepArtifacts} and evidence_pruned is null) or (rank > ${keepTranscripts} and evidence_pruned is distinct from 'transcripts')
            order by created_at limit 200`.pipe(Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ ...RunOfOrg.fields, transcripts: Schema.Boolean }))))),
      failures
    )

    /** An event of the run's (a task's script killed for memory: `oom_killed`), once per step. */
    const appendEvent = Effect.fn("EvalRunsRepo.appendEvent")(
      (orgId: OrgId, runId: string, step: string, type: string, data: Record<string, unknown>) =>
        appendJobEvent(sql, { kind: EVAL_RUN_KIND, orgId, jobId: runId, step, type, data }).pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    /** Records what retention deleted of a run's evidence. */
    const markPruned = Effect.fn("EvalRunsRepo.markPruned")(
      (orgId: OrgId, id: string, pruned: "artifacts" | "transcripts") =>
        sql`update eval_runs set evidence_pruned = ${pruned} where org_id = ${orgId} and id = ${id}`.pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    /** System lookup across orgs: runs still queued between `graceSeconds` and `giveUpSeconds` after their row committed, oldest first. */
    const unbegun = Effect.fn("EvalRunsRepo.unbegun")(unbegunJobs(sql, "eval_runs"), failures)

    /** System change across orgs: runs still queued `giveUpSeconds` after their row committed fail as not started. */
    const giveUpUnbegun = Effect.fn("EvalRunsRepo.giveUpUnbegun")(
      (giveUpSeconds: number) =>
        sql`update eval_runs set status = 'failed', error_code = 'not_started', error_message = 'The run did not start within an hour; start it again',
            ended_at = date_trunc('milliseconds', now())
          where status = 'queued' and created_at < now() - make_interval(secs => ${giveUpSeconds}) returning id`.pipe(Effect.map((rows) => rows.length)),
      failures
    )

    return { insert, inFlightOn, find, page, tasks, task, holdLease, setPhase, grade, taskDone, finish, retally, auditKeyIds, setCoverage, forgetKeys, expired, unbegun, giveUpUnbegun, dueForPruning, markPruned, appendEvent } as const
  })
}) {}
