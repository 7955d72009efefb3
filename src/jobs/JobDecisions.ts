import { DurableDeferred, type Workflow, type WorkflowEngine } from "@effect/workflow"
import { Effect, Exit, type Schema } from "effect"
import { Conflict } from "../domain/Errors"

/** Hands the job that `workflow` runs for `payload`, waiting at `deferred`, what was decided there (or that it was cancelled). */
export const resumeJob = <W extends Workflow.Any, S extends Schema.Schema.Any>(
  workflow: W,
  payload: Schema.Simplify<Schema.Struct.Constructor<W["payloadSchema"]["fields"]>>,
  deferred: DurableDeferred.DurableDeferred<S>,
  value: S["Type"]
): Effect.Effect<void, never, WorkflowEngine.WorkflowEngine | S["Context"]> =>
  Effect.flatMap(DurableDeferred.tokenFromPayload(deferred, { workflow, payload }), (token) => DurableDeferred.done(deferred, { token, exit: Exit.succeed(value) }))

/**
 * A person's decision for a waiting job, taken once: `claim` marks it taken in the job's row (it
 * moves the row on from what it waits for, and is false when it no longer waits for that), and only
 * then is the job resumed. Of two decisions sent at once one is taken, the other refused with 409,
 * rather than both answered and one dropped.
 */
export const decideOnce = <E, R, E2, R2>(options: {
  /** What the job is to its user, for the refusal: "run". */
  readonly noun: string
  readonly claim: Effect.Effect<boolean, E, R>
  readonly resume: Effect.Effect<void, E2, R2>
}): Effect.Effect<void, E | E2 | Conflict, R | R2> =>
  Effect.flatMap(options.claim, (claimed): Effect.Effect<void, E2 | Conflict, R2> =>
    claimed ? options.resume : Effect.fail(new Conflict({ message: `The ${options.noun} is no longer waiting for that decision` }))
  )
