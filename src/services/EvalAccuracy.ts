import { createHash } from "node:crypto"
import { Effect, Schedule } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { Mailer } from "../../layers/Mailer"
import { type AccuracyRecord, changesBetween, REGRESSIONS_LISTED, regressionEmail, taskOutcome } from "../domain/EvalAccuracy"
import { checkRegression, type ComparedRun } from "../domain/EvalRegression"
import type { OrgId } from "../domain/Ids"
import { decodeCursor, pageOf, TimeAndIdCursor } from "../domain/Pagination"
import type { Principal } from "../domain/Principal"
import { EvalAccuracyRepo } from "../repos/EvalAccuracyRepo"
import { attemptOf } from "../domain/EvalRun"
import { type EvalTaskRow, EvalRunsRepo } from "../repos/EvalRunsRepo"
import { EvalAccess } from "./EvalAccess"

// Completed runs this recent are recorded by the sweep when their own end could not.
const RECORD_SWEEP_DAYS = 7
const compared = (record: Pick<AccuracyRecord, "run_id" | "tasks">): ComparedRun => ({ run_id: record.run_id, tasks: record.tasks })

/**
 * Evaluation history: a permanent accuracy record for each completed run, compared as it is written
 * with the trailing comparable runs (same eval set ref, build fingerprint and tasks) for a regression.
 */
export class EvalAccuracy extends Effect.Service<EvalAccuracy>()("sluice/EvalAccuracy", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* EvalAccuracyRepo
    const runs = yield* EvalRunsRepo
    const access = yield* EvalAccess
    const mailer = yield* Mailer

    /** A regression's email to the run's notify addresses: tried again a few times, then logged (the record stands either way). */
    const notify = (record: AccuracyRecord, to: ReadonlyArray<string>) => {
      const email = regressionEmail(record)
      if (email === null || to.length === 0) return Effect.void
      return mailer.send({ to, ...email }).pipe(
        Effect.retry(Schedule.exponential("1 second").pipe(Schedule.intersect(Schedule.recurs(3)))),
        Effect.tap((sent) => (sent ? Effect.void : Effect.logWarning(`eval run ${record.run_id} regressed; no email was sent: SP_SMTP_URL is not set`))),
        Effect.catchAll((error) => Effect.logError(`eval run ${record.run_id} regressed; its email was not sent: ${error.message}`))
      )
    }

    /** Records a completed run once (system work: its job calls this as it ends); the record, or null when it had been recorded or the run is not there. */
    const record = Effect.fn("EvalAccuracy.record")(function* (orgId: OrgId, runId: string) {
      const found = yield* runs.find(orgId, runId)
      if (found === null || found.run.status !== "completed") return null
      const { run } = found
      // A run graded against no known warehouse has nothing comparable: the specification records nothing for it.
      if (run.build_fingerprint === "") return null
      // A task's attempts together: the run's rows are in order, each task's first attempt first.
      const attempts = new Map<string, Array<EvalTaskRow["verdict"]>>()
      for (const row of yield* runs.tasks(orgId, runId)) {
        const { taskId } = attemptOf(row.task_id)
        attempts.set(taskId, [...(attempts.get(taskId) ?? []), row.verdict])
      }
      const tasks = [...attempts].map(([taskId, verdicts]) => taskOutcome(taskId, verdicts))
      // Runs of other tasks (task_ids, a lower max_tasks) score other questions: they are not compared.
      const taskSet = createHash("sha256").update([...attempts.keys()].sort().join("\n")).digest("hex")
      const settings = run.settings
      const circumstances = {
        knowledge: settings.knowledge,
        model: settings.model,
        preamble_sha256: createHash("sha256").update(settings.prompt_preamble).digest("hex"),
        connection_name: settings.connection_name,
        max_tasks: settings.max_tasks,
        attempts: settings.attempts
      }
      const finishedAt = run.ended_at ?? new Date()
      // A run recorded late (by the sweep) is compared with the runs that finished before it, not after.
      const recorded = yield* repo.append(orgId, { ref: run.eval_set_ref, fingerprint: run.build_fingerprint, taskSet, finishedAt }, (trailing) => {
        const comparison = checkRegression({ run_id: run.id, tasks }, trailing.map(compared), config.evalRegressionDropPct)
        return {
          run_id: run.id,
          finished_at: finishedAt,
          eval_set_ref: run.eval_set_ref,
          build_fingerprint: run.build_fingerprint,
          task_set: taskSet,
          trigger: run.trigger,
          accuracy: run.accuracy,
          coverage: run.coverage,
          ...circumstances,
          tasks,
          comparison,
          changes: trailing[0] === undefined ? [] : changesBetween(trailing[0], circumstances),
          regressed: comparison?.regression != null
        }
      })
      if (recorded?.regressed === true) yield* notify(recorded, settings.notify_emails)
      return recorded
    })

    /**
     * System work: records completed runs of the last week whose job ended without recording them
     * (its process died between the run's end and its record, or the store was away longer than the
     * retries); how many it recorded. Every replica may run it: a run is recorded once.
     */
    const recordMissed = Effect.gen(function* () {
      const missed = yield* repo.unrecorded(RECORD_SWEEP_DAYS)
      const recorded = yield* Effect.forEach(missed, (run) => record(run.org_id, run.id))
      return recorded.filter((made) => made !== null).length
    })

    /** `GET /api/evals/accuracy`: the history, newest first, and the regressions detected. */
    const history = Effect.fn("EvalAccuracy.history")(function* (principal: Principal, params: { limit?: number | undefined; cursor?: string | undefined }) {
      yield* access.allowed(principal)
      const limit = params.limit ?? 50
      const before = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, TimeAndIdCursor)
      const rows = yield* repo.page(principal.orgId, before, limit + 1)
      const page = pageOf(rows, limit, (last: AccuracyRecord) => [last.finished_at.toISOString(), last.run_id])
      return { ...page, regressions: yield* repo.regressions(principal.orgId, REGRESSIONS_LISTED) }
    })

    return { record, recordMissed, history } as const
  }),
  dependencies: [EvalAccuracyRepo.Default, EvalRunsRepo.Default, EvalAccess.Default, Mailer.Default]
}) {}
