import { Cause, Effect, Option, Schedule } from "effect"
import { isStoreOutage } from "../repos/StoreErrors"

/** A store that blinks or is slow to hand out a session (a loaded machine) is waited for, 0.5 to 4 s apart, before a step gives up. */
const storeOutageRetry = Schedule.exponential("500 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(5)))

/** How a job stops: its own stop error's tag, and how it records a failure and fails with that stop (the store out, or anything else). */
export interface JobStop<S> {
  readonly tag: string
  readonly fail: (failure: { readonly outage: boolean; readonly message: string | undefined }, cause: Cause.Cause<unknown>) => Effect.Effect<never, S>
}

/**
 * A job step's effect, done again while the store is out; any other failure or defect is the job's
 * `stop.fail` (recorded, so no job is left running), but for the job's own stop, passed on. An
 * interrupted step (its runner stopping, its shard moving) is no failure: it runs again where the
 * job resumes. A failure's message is offered where it has one of its own (a store error's is not).
 */
export const guardedStep = <A, E extends { readonly _tag: string }, S>(stop: JobStop<S>, effect: Effect.Effect<A, E>): Effect.Effect<A, S> =>
  effect.pipe(
    Effect.retry({ schedule: storeOutageRetry, while: isStoreOutage }),
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure) && failure.value._tag === stop.tag) return Effect.fail(failure.value as unknown as S)
      const outage = Option.exists(failure, isStoreOutage)
      const message = Option.match(failure, {
        onNone: () => undefined,
        onSome: (e) => ("message" in e && typeof e.message === "string" && e._tag !== "SqlError" ? e.message : undefined)
      })
      return stop.fail({ outage, message }, cause)
    })
  )
