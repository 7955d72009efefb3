import { Effect, Schedule } from "effect"
import { ObjectStore } from "../../../layers/ObjectStore"
import { RUNNER_LABEL } from "../../../layers/RunnerIdentity"
import { EVAL_RUN_ENDED, runPrefix, taskKeyPrefix } from "../../../src/domain/EvalRun"
import type { Unavailable } from "../../../src/domain/Errors"
import type { OrgId } from "../../../src/domain/Ids"
import type { Principal } from "../../../src/domain/Principal"
import type { Scope } from "../../../src/domain/Scope"
import { EvalRunStopped } from "../../../src/jobs/EvalRunWorkflow"
import { guardedStep } from "../../../src/jobs/GuardedStep"
import { JobSteps } from "../../../src/jobs/JobSteps"
import { EvalRunsRepo, shownTask, type StoredEvalRun } from "../../../src/repos/EvalRunsRepo"
import { ActingPrincipals } from "../../../src/services/ActingPrincipals"
import { ApiKeys } from "../../../src/services/ApiKeys"
import { DbBranches } from "../../../src/services/DbBranches"
import { EvalAccuracy } from "../../../src/services/EvalAccuracy"
import { RunCoverage } from "../../../src/services/RunCoverage"
import { EvalSets, type LoadedEvalSet } from "../../../src/services/EvalSets"

/** A running run's lease: renewed every 45 s by whichever runner runs it; 180 s without a renewal and the reaper fails it. */
export const LEASE_SECONDS = 180
export const LEASE_RENEWAL = "45 seconds"
// The starter's credential reads the set, and makes the tasks' keys (read and query only).
export const STARTER_SCOPES: ReadonlySet<Scope> = new Set(["read", "query", "write", "admin"])


/**
 * An evaluation run's beginning and end, and what its steps share: the run loaded while it has not
 * ended, who it acts as, its eval set as read at its pinned commit, and its end (keys revoked,
 * `run.json` written) whether it completed, failed, or its lease expired.
 */
export class EvalRunLifecycle extends Effect.Service<EvalRunLifecycle>()("sluice/EvalRunLifecycle", {
  effect: Effect.gen(function* () {
    const repo = yield* EvalRunsRepo
    const acting = yield* ActingPrincipals
    const sets = yield* EvalSets
    const keys = yield* ApiKeys
    const objects = yield* ObjectStore
    const jobSteps = yield* JobSteps
    const branches = yield* DbBranches
    const accuracy = yield* EvalAccuracy
    const coverages = yield* RunCoverage
    // A run's set, read once per runner while it runs: every step of its tasks reads it.
    const loadedSets = new Map<string, LoadedEvalSet>()

    const stopped = (status: "failed" | "cancelled", code: string, message: string) => new EvalRunStopped({ status, code, message })

    /** The run while it has not ended: a step done again after its run ended does nothing. */
    const load = (orgId: OrgId, runId: string) =>
      Effect.flatMap(repo.find(orgId, runId), (found) =>
        found === null
          ? Effect.fail(stopped("failed", "not_found", "The run is gone"))
          : EVAL_RUN_ENDED.has(found.run.status)
            ? Effect.fail(stopped(found.run.status === "cancelled" ? "cancelled" : "failed", "ended", `The run has ended (${found.run.status})`))
            : Effect.succeed(found)
      )

    /** Revokes every key of its tasks, by name (one a task made but could not record too): a task's key opens nothing once its run has ended. */
    const revokeKeys = (orgId: OrgId, runId: string) => Effect.zipRight(keys.revokeNamed(orgId, taskKeyPrefix(runId)), repo.forgetKeys(orgId, runId))

    /** `run.json`: the run, its tasks, their verdicts and checks, as the run ended. */
    const writeRunJson = (orgId: OrgId, runId: string) =>
      Effect.gen(function* () {
        const found = yield* repo.find(orgId, runId)
        if (found === null) return
        const tasks = (yield* repo.tasks(orgId, runId)).map(shownTask)
        const backend = yield* objects.backend
        yield* backend.put(`${runPrefix(orgId, runId)}/run.json`, Buffer.from(JSON.stringify({ run: found.run, tasks }, null, 2)), "application/json")
      }).pipe(Effect.catchAll((error) => Effect.logWarning(`eval run ${runId}: run.json could not be written`, error)))

    /** The run's permanent accuracy record, compared with the runs before it; a store that blinks is tried again. */
    const recordAccuracy = (orgId: OrgId, runId: string) =>
      accuracy.record(orgId, runId).pipe(
        Effect.retry(Schedule.exponential("500 millis").pipe(Schedule.intersect(Schedule.recurs(4)))),
        Effect.catchAll((error) => Effect.logError(`eval run ${runId}: its accuracy record could not be written`, error))
      )

    /** Ends the run once (the reaper's only if its lease has indeed expired): keys revoked, branches deleted, tally and `run.json` written. */
    const end = (orgId: OrgId, runId: string, outcome: Parameters<typeof repo.finish>[2]) =>
      Effect.gen(function* () {
        const ended = yield* repo.finish(orgId, runId, outcome)
        // Its runner renewed the lease after the reaper looked: the run goes on, with its keys.
        if (!ended && outcome.leaseExpired === true) return false
        yield* revokeKeys(orgId, runId)
        // Its own copy of the warehouse and any task's left; one that cannot be deleted now is the branch reaper's (its job has ended).
        yield* branches.removeOwned(orgId, runId).pipe(Effect.catchAll((error) => Effect.logWarning(`eval run ${runId}: its branches are left to the branch reaper`, error)))
        if (ended) yield* writeRunJson(orgId, runId)
        if (ended && outcome.status === "completed") yield* recordAccuracy(orgId, runId)
        yield* jobSteps.forget(runId)
        loadedSets.delete(runId)
        return ended
      })

    const stop = (orgId: OrgId, runId: string, code: string, message: string) =>
      Effect.zipRight(Effect.orDie(end(orgId, runId, { status: "failed", error: { code, message } })), Effect.fail(stopped("failed", code, message)))

    /** A run-level step's effect, done again while the store is out, and any other failure or defect the run's (recorded). */
    const guarded = <A, E extends { readonly _tag: string }>(orgId: OrgId, runId: string, effect: Effect.Effect<A, E>): Effect.Effect<A, EvalRunStopped> =>
      guardedStep(
        {
          tag: "EvalRunStopped",
          fail: ({ outage, message }, cause) =>
            Effect.zipRight(
              Effect.logError(`eval run ${runId} failed`, cause),
              stop(orgId, runId, outage ? "unavailable" : "internal_error", message ?? "The run failed; the gateway's log has the details")
            )
        },
        effect
      )

    /** Who the run acts as now: its starter's credential checked again (deleted, the run fails). */
    const starter = (stored: StoredEvalRun): Effect.Effect<Principal, EvalRunStopped | Unavailable> =>
      acting.actingAs(stored, STARTER_SCOPES, "eval run").pipe(Effect.catchTag("CredentialGone", (gone) => stop(stored.orgId, stored.run.id, "credential_revoked", gone.message)))

    /** The run's eval set at the commit the run pinned. */
    const setOf = (stored: StoredEvalRun, principal: Principal) => {
      const cached = loadedSets.get(stored.run.id)
      return cached !== undefined ? Effect.succeed(cached) : Effect.tap(sets.loadSource(principal, stored.source), (set) => Effect.sync(() => loadedSets.set(stored.run.id, set)))
    }

    /** The run, who it acts as, and its set, while it has not ended. */
    const context = (orgId: OrgId, runId: string) =>
      Effect.gen(function* () {
        const stored = yield* load(orgId, runId)
        const principal = yield* starter(stored)
        const set = yield* setOf(stored, principal)
        return { stored, principal, set }
      })

    /**
     * Takes or renews the run's lease for whichever runner runs it now. A lease that expired (no
     * runner held it for 180 s) is not taken up again: the run is failed as the reaper fails it,
     * whoever gets there first. A store that blinks misses one renewal of four in a lease.
     */
    const holdLease = (orgId: OrgId, runId: string) =>
      repo.holdLease(orgId, runId, LEASE_SECONDS, RUNNER_LABEL).pipe(
        Effect.tap((held) => (held ? Effect.void : reap(orgId, runId))),
        Effect.catchAll((error) => Effect.as(Effect.logWarning(`eval run ${runId}: its lease could not be renewed`, error), true))
      )

    /** The run's task ids, in order, once its set and its starter's credential are checked. */
    const begin = (orgId: OrgId, runId: string) =>
      guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          yield* context(orgId, runId)
          return (yield* repo.tasks(orgId, runId)).map((task) => task.task_id)
        })
      )

    /** The run's end once its tasks are done: its coverage of the set's dbt project (a failure to reckon it is logged: the run completed), then its end. */
    const complete = (orgId: OrgId, runId: string) =>
      guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          const { stored, principal, set } = yield* context(orgId, runId)
          const coverage = yield* coverages.of(principal, stored.run, set.manifest).pipe(
            Effect.catchAll((error) => Effect.as(Effect.logWarning(`eval run ${runId}: its coverage could not be reckoned`, error), null))
          )
          if (coverage !== null) yield* repo.setCoverage(orgId, runId, coverage)
          yield* end(orgId, runId, { status: "completed" })
        })
      )

    /** The reaper's end of a run whose lease expired: false when its runner renewed it meanwhile, or it had ended. */
    const reap = (orgId: OrgId, runId: string) =>
      end(orgId, runId, { status: "failed", error: { code: "lease_expired", message: `No runner renewed the run's lease for ${LEASE_SECONDS} s (its runner stopped); it was failed` }, leaseExpired: true })

    return { load, guarded, context, holdLease, begin, complete, reap, stop } as const
  }),
  dependencies: [EvalAccuracy.Default, RunCoverage.Default, EvalRunsRepo.Default, ActingPrincipals.Default, EvalSets.Default, ApiKeys.Default, ObjectStore.Default, JobSteps.Default, DbBranches.Default]
}) {}
