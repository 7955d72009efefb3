import { Effect, Layer, Schedule } from "effect"
import { EvalRunsRepo } from "../../src/repos/EvalRunsRepo"
import { EvalRunLifecycle } from "../jobs/evalRun/EvalRunLifecycle"

const EVERY = "120 seconds"

/**
 * At startup and every 120 s, on every replica: fails each running eval run whose lease expired
 * (no runner renewed it for 180 s), revoking its tasks' keys. A run whose runner renews its lease
 * meanwhile is left alone (the failure is conditional on the expiry), so replicas need no leader.
 */
export const EvalRunReaperLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const repo = yield* EvalRunsRepo
    const lifecycle = yield* EvalRunLifecycle
    const pass = repo.expired().pipe(
      Effect.flatMap((runs) => Effect.forEach(runs, (run) => lifecycle.reap(run.org_id, run.id))),
      Effect.tap((reaped) => {
        const count = reaped.filter(Boolean).length
        return count > 0 ? Effect.logWarning(`eval reaper failed ${count} run(s) whose lease expired`) : Effect.void
      }),
      Effect.catchAllCause((cause) => Effect.logError("eval reaper failed", cause))
    )
    yield* Effect.repeat(pass, Schedule.spaced(EVERY)).pipe(Effect.forkScoped)
  })
)
