import { WorkflowEngine } from "@effect/workflow"
import { Duration, Effect, Layer, Schedule } from "effect"
import { JobRuntime } from "../../layers/JobRuntime"
import type { JobKind } from "../../src/jobs/JobKind"
import { JobSteps } from "../../src/jobs/JobSteps"

const LOOK_EVERY = Duration.seconds(1)
const SWEEP_EVERY = Duration.minutes(1)
// The jobs this starter has started, to say so once each: a job it starts again (its first step still to come) is not news.
const REMEMBERED = 10_000

/**
 * Once across the runners (a cluster singleton: it moves when its runner dies), every second:
 * starts each job whose row committed but whose start was lost (its process died in between), and
 * ends as not started those that waited an hour; and every minute, sweeps the step records no job
 * will ask for again.
 */
export const jobStarter = <R>(...kinds: ReadonlyArray<Effect.Effect<JobKind, never, R>>) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const { engine, sharding } = yield* JobRuntime
      const steps = yield* JobSteps
      const known = yield* Effect.all(kinds)
      const started = new Set<string>()
      const look = (kind: JobKind) =>
        Effect.gen(function* () {
          const abandoned = yield* kind.giveUp
          if (abandoned > 0) yield* Effect.logWarning(`${abandoned} ${kind.name} job(s) not begun within an hour of their start ended as not started`)
          for (const job of yield* kind.unbegun) {
            // One job whose start fails does not hold up the others.
            yield* job.start.pipe(Effect.catchAllCause((cause) => Effect.logWarning(`starting ${kind.name} ${job.id} failed`, cause)))
            if (started.has(job.id)) continue
            if (started.size >= REMEMBERED) started.clear()
            started.add(job.id)
            yield* Effect.logWarning(`started ${kind.name} ${job.id}, whose start was lost`)
          }
        }).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`looking for ${kind.name} jobs whose start was lost failed`, cause)))
      const looks = Effect.forEach(known, look, { discard: true }).pipe(Effect.provideService(WorkflowEngine.WorkflowEngine, engine))
      yield* sharding.registerSingleton("sluice/job-starter", Effect.repeat(looks, Schedule.spaced(LOOK_EVERY)).pipe(Effect.asVoid))
      const sweep = steps.sweep.pipe(Effect.catchAllCause((cause) => Effect.logWarning("sweeping old job step records failed", cause)))
      yield* sharding.registerSingleton("sluice/job-steps-sweeper", Effect.repeat(sweep, Schedule.spaced(SWEEP_EVERY)).pipe(Effect.asVoid))
    })
  )
