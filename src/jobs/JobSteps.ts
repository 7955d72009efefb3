import { Deferred, Duration, Effect, FiberId, Schema } from "effect"
import { RUNNER_ADDRESS, storeSessionName } from "../../layers/RunnerIdentity"
import { JobStepsRepo } from "../repos/JobStepsRepo"

// Who runs a step: this process's store session name, so a runner that died is known at once.
const RUNNER = storeSessionName(RUNNER_ADDRESS)
const HEARTBEAT = Duration.seconds(1)
const LOOK_AGAIN = Duration.millis(250)

/**
 * Runs each step of a durable job once to its end, by one runner at a time. A job moves to another
 * runner when its shard does (a runner joined or left), and the cluster then interrupts the job
 * where it was; its step in flight goes on here all the same (it runs in this service's scope, not
 * the job's), and the new runner waits for its result instead of doing it again (a model call paid
 * twice). A step whose runner died, or stopped (this service's scope closes), is taken over within seconds.
 */
export class JobSteps extends Effect.Service<JobSteps>()("sluice/JobSteps", {
  scoped: Effect.gen(function* () {
    const repo = yield* JobStepsRepo
    const scope = yield* Effect.scope
    // The steps this process is running or waiting for: a second call here waits for the first.
    const here = new Map<string, Deferred.Deferred<unknown, unknown>>()

    const once = <A, I, E, R>(jobId: string, step: string, success: Schema.Schema<A, I>, execute: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        const key = `${jobId}\u0000${step}`
        const running = here.get(key) as Deferred.Deferred<A, E> | undefined
        if (running !== undefined) return Deferred.await(running)
        const done = Deferred.unsafeMake<A, E>(FiberId.none)
        here.set(key, done as Deferred.Deferred<unknown, unknown>)
        const heartbeat = repo.heartbeat(jobId, step, RUNNER).pipe(Effect.ignore, Effect.delay(HEARTBEAT), Effect.forever)
        const runIt = Effect.scoped(Effect.zipRight(Effect.forkScoped(heartbeat), execute)).pipe(
          Effect.tap((result) => Effect.flatMap(Schema.encode(success)(result), (encoded) => repo.finish(jobId, step, RUNNER, encoded)).pipe(Effect.orDie)),
          Effect.onError(() => Effect.ignore(repo.release(jobId, step, RUNNER)))
        )
        const attempt: Effect.Effect<A, E, R> = Effect.gen(function* () {
          while (true) {
            if (yield* Effect.orDie(repo.claim(jobId, step, RUNNER))) return yield* runIt
            const recorded = yield* Effect.orDie(repo.resultOf(jobId, step))
            if (recorded !== null) return yield* Effect.orDie(Schema.decodeUnknown(success)(recorded.result))
            yield* Effect.sleep(LOOK_AGAIN)
          }
        })
        // The caller may be interrupted (its job moved away): it stops waiting, the step goes on.
        return attempt.pipe(
          Effect.onExit((exit) => Effect.zipRight(Effect.sync(() => here.delete(key)), Deferred.done(done, exit))),
          Effect.forkIn(scope),
          Effect.zipRight(Deferred.await(done))
        )
      })

    /** The job has ended: the records of its steps go. */
    const forget = (jobId: string) => repo.forget(jobId)

    return { once, forget } as const
  }),
  dependencies: [JobStepsRepo.Default]
}) {}
