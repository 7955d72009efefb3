import { Duration, Effect, Fiber, Schedule, Schema } from "effect"
import { RUNNER_ADDRESS, storeSessionName } from "../../layers/RunnerIdentity"
import { JobStepsRepo } from "../repos/JobStepsRepo"

// Who runs a step: this process's store session name, so a runner that died is known at once.
const RUNNER = storeSessionName(RUNNER_ADDRESS)
const HEARTBEAT = Duration.seconds(1)
const LOOK_AGAIN = Duration.millis(250)
/** A store that blinks is waited for (0.2, 0.4, 0.8, 1.6, 3.2 s): a step's bookkeeping failing once does not end its job. */
const storeRetry = Schedule.exponential("200 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(5)))

/**
 * Runs each step of a durable job once to its end, by one runner at a time. A job moves to another
 * runner when its shard does (a runner joined or left), and the cluster then interrupts the job
 * where it was; its step in flight goes on here all the same (it runs in this service's scope, not
 * the job's), and the new runner waits for its result instead of doing it again (a model call paid
 * twice). A step whose runner died, or stopped (this service's scope closes, interrupting its
 * steps), is taken over at once; a claim whose heartbeat stopped, within 30 s.
 */
export class JobSteps extends Effect.Service<JobSteps>()("sluice/JobSteps", {
  scoped: Effect.gen(function* () {
    const repo = yield* JobStepsRepo
    const scope = yield* Effect.scope
    // The steps this process is running or waiting for: a second call here joins the first.
    const here = new Map<string, Fiber.RuntimeFiber<unknown, unknown>>()

    const once = <A, I, E, R>(jobId: string, step: string, success: Schema.Schema<A, I>, execute: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        const key = `${jobId}\u0000${step}`
        const running = here.get(key) as Fiber.RuntimeFiber<A, E> | undefined
        if (running !== undefined) return Fiber.join(running)
        const heartbeat = repo.heartbeat(jobId, step, RUNNER).pipe(Effect.ignore, Effect.delay(HEARTBEAT), Effect.forever)
        const runIt = Effect.scoped(Effect.zipRight(Effect.forkScoped(heartbeat), execute)).pipe(
          Effect.tap((result) =>
            Effect.flatMap(Schema.encode(success)(result), (encoded) => repo.finish(jobId, step, RUNNER, encoded).pipe(Effect.retry(storeRetry))).pipe(
              // The workflow's own journal still has the result: a step whose record could not be written is not failed for it.
              Effect.catchAll(() => Effect.logWarning(`job step ${step} of ${jobId} finished, but its result could not be recorded`))
            )
          ),
          Effect.onError(() => Effect.ignore(repo.release(jobId, step, RUNNER)))
        )
        // The bookkeeping only keeps a step from running twice: a store that cannot keep it does not stop the step (it runs, as it would without the kit).
        const unkept = (what: string) => (error: unknown) =>
          Effect.as(Effect.logWarning(`job step ${step} of ${jobId}: ${what} failed; the step runs unclaimed`, error), { unkept: true } as const)
        const attempt: Effect.Effect<A, E, R> = Effect.gen(function* () {
          while (true) {
            const claimed = yield* Effect.retry(repo.claim(jobId, step, RUNNER), storeRetry).pipe(Effect.catchAll(unkept("claiming it")))
            if (claimed !== false) return yield* runIt
            const recorded = yield* Effect.retry(repo.resultOf(jobId, step), storeRetry).pipe(Effect.catchAll(unkept("reading its result")))
            if (recorded !== null && "unkept" in recorded) return yield* runIt
            if (recorded !== null) {
              // Not the parse error itself: it would quote the result, which can hold a tenant's rows.
              return yield* Schema.decodeUnknown(success)(recorded.result).pipe(Effect.catchAll(() => Effect.dieMessage(`the recorded result of job step ${step} could not be read`)))
            }
            yield* Effect.sleep(LOOK_AGAIN)
          }
        })
        // Interruptible whatever the caller's region (an activity runs uninterruptible), so a stopping runner stops its steps.
        return Effect.flatMap(Effect.forkIn(Effect.interruptible(attempt), scope), (fiber) => {
          here.set(key, fiber)
          fiber.addObserver(() => {
            if (here.get(key) === fiber) here.delete(key)
          })
          // The caller may be interrupted (its job moved away): it stops waiting, the step goes on.
          return Fiber.join(fiber)
        })
      })

    /** The job has ended: the records of its steps go. */
    const forget = (jobId: string) => repo.forget(jobId)

    /** The records of steps no job will ask for again (a job that ended without saying so: its process died for good, its row was deleted). */
    const sweep = repo.sweep

    return { once, forget, sweep } as const
  }),
  dependencies: [JobStepsRepo.Default]
}) {}
