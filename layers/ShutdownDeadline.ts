import { Duration, Effect, Layer } from "effect"
import { AppConfig } from "./AppConfig"

/** How SP_SHUTDOWN_TIMEOUT_SECONDS is spent after SIGTERM. */
export interface ShutdownPlan {
  /** Requests in flight may finish within this; then their connections are cut. */
  readonly drainFor: Duration.Duration
  /** After the cut, how long the cut requests may take to record how they ended. */
  readonly settleFor: Duration.Duration
  /** The whole stop, teardown (audit flush, pools, store) included; past it the process is forced out. */
  readonly exitBy: Duration.Duration
  /** Job steps in flight may finish within this; then they are interrupted, and another runner resumes their jobs. */
  readonly stepsFor: Duration.Duration
}

/** The teardown after the drain keeps 2 s of the deadline (a quarter of it when shorter); job steps in flight get as long. */
export const shutdownPlan = (seconds: number): ShutdownPlan => {
  const totalMs = seconds * 1000
  const reserveMs = Math.min(2000, totalMs / 4)
  return { drainFor: Duration.millis(totalMs - reserveMs), settleFor: Duration.millis(reserveMs / 2), exitBy: Duration.millis(totalMs), stepsFor: Duration.millis(reserveMs) }
}

/**
 * Released with the servers, as the stop begins: a teardown still running at the deadline (a store
 * that stopped answering, a pool that will not close) is cut short by exiting with code 1.
 */
export const ShutdownDeadline = Layer.scopedDiscard(
  Effect.gen(function* () {
    const { shutdownTimeoutSeconds } = yield* AppConfig
    const { exitBy } = shutdownPlan(shutdownTimeoutSeconds)
    yield* Effect.addFinalizer(() =>
      Effect.logError(`shutdown: the teardown did not finish within SP_SHUTDOWN_TIMEOUT_SECONDS (${shutdownTimeoutSeconds} s); exiting without it`).pipe(
        Effect.zipRight(Effect.sync(() => process.exit(1))),
        Effect.delay(exitBy),
        // Outlives the scope it is forked from: it is what ends a teardown that does not end.
        Effect.forkDaemon,
        Effect.asVoid
      )
    )
  })
)
