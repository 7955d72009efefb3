import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { Conflict, Unavailable } from "../domain/Errors"

/** A store failure reaches the caller as 503 `unavailable`, never as a 401 or a leaked driver message. */
export const storeUnavailable =
  (what: string) =>
  <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | Unavailable, R> =>
    effect.pipe(
      // The caller hears "unavailable"; the operator's log has what the store said.
      Effect.tapError((error) => ((error as { _tag?: string })._tag === "SqlError" ? Effect.logWarning(`${what}: store error`, error) : Effect.void)),
      Effect.mapError((error) =>
        (error as { _tag?: string })._tag === "SqlError"
          ? new Unavailable({ message: `The ${what} is unavailable; try again shortly` })
          : (error as Exclude<E, SqlError>)
      )
    )

const isUniqueViolation = (error: SqlError) => (error.cause as { code?: string } | undefined)?.code === "23505"

/** A unique-key violation (a name already taken) reaches the caller as 409 `conflict` with `message`. */
export const conflictOnDuplicate =
  (message: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError, R>): Effect.Effect<A, SqlError | Conflict, R> =>
    Effect.catchIf(effect, isUniqueViolation, () => new Conflict({ message }))
