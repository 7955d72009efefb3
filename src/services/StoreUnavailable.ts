import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { Conflict, Unavailable } from "../domain/Errors"

// SQLSTATE classes of a store that cannot serve a statement now (connection, resources, shutdown or cancel, system, a transaction to retry).
const PASSING = new Set(["08", "40", "53", "57", "58"])

/**
 * The store refused the statement itself (a value it cannot take, a constraint, a mistake of ours):
 * it said so with a SQLSTATE, and trying again shortly would change nothing.
 */
const refusedStatement = (error: SqlError) => {
  const cause = error.cause as { readonly code?: unknown; readonly severity?: unknown } | undefined
  return typeof cause?.code === "string" && typeof cause.severity === "string" && !PASSING.has(cause.code.slice(0, 2))
}

/**
 * A store that cannot answer reaches the caller as 503 `unavailable` ("try again shortly"), never
 * as a 401 or a leaked driver message; a statement the store refused for what it is, as a 500
 * (a defect: the operator's log has it), not as an outage to wait out.
 */
export const storeUnavailable =
  (what: string) =>
  <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | Unavailable, R> =>
    Effect.catchIf(
      effect,
      (error): error is SqlError => (error as { _tag?: string })._tag === "SqlError",
      (error) =>
        refusedStatement(error)
          ? Effect.die(error)
          : // The caller hears "unavailable"; the operator's log has what the store said.
            Effect.zipRight(Effect.logWarning(`${what}: store error`, error), Effect.fail(new Unavailable({ message: `The ${what} is unavailable; try again shortly` })))
    ) as Effect.Effect<A, Exclude<E, SqlError> | Unavailable, R>

const isUniqueViolation = (error: SqlError) => (error.cause as { code?: string } | undefined)?.code === "23505"

/** A unique-key violation (a name already taken) reaches the caller as 409 `conflict` with `message`. */
export const conflictOnDuplicate =
  (message: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError, R>): Effect.Effect<A, SqlError | Conflict, R> =>
    Effect.catchIf(effect, isUniqueViolation, () => new Conflict({ message }))
