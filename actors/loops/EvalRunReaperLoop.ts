import { Effect, Layer, Schedule } from "effect"
import { EvalRunsRepo } from "../../src/repos/EvalRunsRepo"
import { EvalAccuracy } from "../../src/services/EvalAccuracy"
import { EvalRunLifecycle } from "../jobs/evalRun/EvalRunLifecycle"

const EVERY = "120 seconds"

/**
 * At startup and every 120 s, on every replica: fails each running eval run whose lease expired
 * (no runner renewed it for 180 s), revoking its tasks' keys. A run whose runner renews its lease
 * meanwhile is left alone (the failure is conditional on the expiry), so replicas need no leader.
 * Then records the completed runs whose accuracy record their end could not write.
 */
export const EvalRunReaperLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const repo = yield* EvalRunsRepo
    const lifecycle = yield* EvalRunLifecycle
    const accuracy = yield* EvalAccuracy
    const pass = repo.expired().pipe(
      Effect.flatMap((runs) => Effect.forEach(runs, (run) => lifecycle.reap(run.org_id, run.id))),
      Effect.tap((reaped) => {
        const count = reaped.filter(Boolean).length
        return count > 0 ? Effect.logWarning(`eval reaper failed ${count} run(s) whose lease expired`) : Effect.void
      }),
      Effect.catchAllCause((cause) => Effect.logError("eval reaper failed", cause))
    )
    // A completed run whose own end could not record its accuracy (its process died, the store was away) is recorded here.
    const recordMissed = accuracy.recordMissed.pipe(
      Effect.tap((recorded) => (recorded > 0 ? Effect.logWarning(`eval reaper recorded the accuracy of ${recorded} completed run(s) their end had not`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logError("eval reaper could not record missed accuracy records", cause))
    )
    yield* Effect.repeat(Effect.zipRight(pass, recordMissed), Schedule.spaced(EVERY)).pipe(Effect.forkScoped)
  })
)
