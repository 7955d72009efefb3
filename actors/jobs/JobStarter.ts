import { WorkflowEngine } from "@effect/workflow"
import { Duration, Effect, Layer, Schedule } from "effect"
import { JobRuntime } from "../../layers/JobRuntime"
import { type JobKind, START_GRACE_SECONDS } from "../../src/jobs/JobKind"

const LOOK_EVERY = Duration.seconds(1)

/**
 * Once across the runners (a cluster singleton: it moves when its runner dies), every second:
 * starts each job whose row committed but whose start was lost (its process died in between).
 */
export const jobStarter = <R>(...kinds: ReadonlyArray<Effect.Effect<JobKind, never, R>>) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const { engine, sharding } = yield* JobRuntime
      const known = yield* Effect.all(kinds)
      const look = Effect.forEach(
        known,
        (kind) =>
          kind.startUnbegun(START_GRACE_SECONDS).pipe(
            Effect.tap((started) => (started > 0 ? Effect.logWarning(`started ${started} ${kind.name} job(s) whose start was lost`) : Effect.void)),
            Effect.catchAllCause((cause) => Effect.logWarning(`looking for ${kind.name} jobs whose start was lost failed`, cause))
          ),
        { discard: true }
      ).pipe(Effect.provideService(WorkflowEngine.WorkflowEngine, engine))
      yield* sharding.registerSingleton("sluice/job-starter", Effect.repeat(look, Schedule.spaced(LOOK_EVERY)).pipe(Effect.asVoid))
    })
  )
