import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { Unavailable } from "../domain/Errors"

/** A store failure reaches the caller as 503 `unavailable`, never as a 401 or a leaked driver message. */
export const storeUnavailable =
  (what: string) =>
  <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | Unavailable, R> =>
    Effect.mapError(effect, (error) =>
      (error as { _tag?: string })._tag === "SqlError"
        ? new Unavailable({ message: `The ${what} is unavailable; try again shortly` })
        : (error as Exclude<E, SqlError>)
    )
