import { Deferred, Duration, Effect, Schedule } from "effect"
import { AgentRunsRepo } from "../repos/AgentRunsRepo"

const POLL = Duration.millis(250)
// A follower looks again at least this often, so a run that ended without a new event is noticed.
const MAX_WAIT = Duration.seconds(2)

interface Waiter {
  readonly after: number
  readonly wake: Deferred.Deferred<void>
}

/**
 * Tells a run's followers when it may have new events: at once when this process wrote them,
 * else within one poll of the store shared by every follower in the process (one query for all
 * the runs followed, not one per stream).
 */
export class RunEventsFeed extends Effect.Service<RunEventsFeed>()("sluice/RunEventsFeed", {
  scoped: Effect.gen(function* () {
    const repo = yield* AgentRunsRepo
    const waiting = new Map<string, Set<Waiter>>()

    const wake = (runId: string, latest: number) => {
      const waiters = waiting.get(runId)
      for (const waiter of waiters ?? []) {
        if (waiter.after < latest) Deferred.unsafeDone(waiter.wake, Effect.void)
      }
    }

    /** This process wrote an event of the run: its followers here look now. */
    const published = (runId: string) => Effect.sync(() => wake(runId, Number.POSITIVE_INFINITY))

    const poll = Effect.suspend(() => {
      if (waiting.size === 0) return Effect.void
      return Effect.map(repo.latestSeqs([...waiting.keys()]), (latest) => latest.forEach(({ run_id, seq }) => wake(run_id, seq)))
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("run events poll failed", cause)))
    yield* Effect.forkScoped(Effect.repeat(poll, Schedule.spaced(POLL)))

    /** Waits until run `runId` may have events after `afterSeq`, or a short while passes: the follower reads again either way. */
    const news = (runId: string, afterSeq: number) =>
      Effect.flatMap(Deferred.make<void>(), (wakeUp) => {
        const waiter: Waiter = { after: afterSeq, wake: wakeUp }
        return Effect.sync(() => waiting.set(runId, (waiting.get(runId) ?? new Set()).add(waiter))).pipe(
          Effect.zipRight(Deferred.await(wakeUp).pipe(Effect.timeout(MAX_WAIT), Effect.ignore)),
          Effect.ensuring(
            Effect.sync(() => {
              const waiters = waiting.get(runId)
              waiters?.delete(waiter)
              if (waiters?.size === 0) waiting.delete(runId)
            })
          )
        )
      })

    return { news, published } as const
  }),
  dependencies: [AgentRunsRepo.Default]
}) {}
