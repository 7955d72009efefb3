import { SqlError } from "@effect/sql/SqlError"
import { Cause, Data, Effect, ParseResult, Predicate } from "effect"
import { Conflict, Unavailable } from "../domain/Errors"

/** What a statement can end with besides its answer: the store's error, a row that does not decode, no row where one must be. */
type StoreFault = SqlError | ParseResult.ParseError | Cause.NoSuchElementException

const isStoreFault = (error: unknown): error is StoreFault =>
  error instanceof SqlError || ParseResult.isParseError(error) || Cause.isNoSuchElementException(error)

// SQLSTATE classes about the statement or its values (unsupported feature, cardinality, data, constraints, triggers and
// functions, names and syntax, limits, a raise, an internal error). Any other class is the store's state (read-only,
// locks, resources, shutdown, connection…): it passes, and the statement may succeed later.
const REFUSING = new Set(["0A", "21", "22", "23", "27", "2F", "38", "39", "3F", "42", "44", "54", "P0", "XX"])

/**
 * The store refused the statement itself (a value it cannot take, a constraint, a mistake of ours):
 * it said so with a SQLSTATE, and trying again shortly would change nothing.
 */
const refusedStatement = ({ cause }: SqlError) =>
  Predicate.hasProperty(cause, "code") &&
  Predicate.hasProperty(cause, "severity") &&
  Predicate.isString(cause.code) &&
  Predicate.isString(cause.severity) &&
  REFUSING.has(cause.code.slice(0, 2))

/** A store that could not answer now (an outage, a pool that timed out), raw or mapped: trying again later can help. */
export const isStoreOutage = (error: unknown): boolean =>
  error instanceof Unavailable || (error instanceof SqlError && !refusedStatement(error))

/** A row that does not decode is our mistake (a schema behind a migration): the defect names the fields, never their values. */
const undecodable = (what: string, error: ParseResult.ParseError) =>
  new Error(
    `${what}: a row from the store does not decode at ${ParseResult.ArrayFormatter.formatErrorSync(error)
      .map((issue) => issue.path.join(".") || "(row)")
      .join(", ")}`
  )

/** The store refused a statement for what it is (a SQLSTATE about the statement or its values): trying it again unchanged would fail again. */
export class StatementRefused extends Data.TaggedError("StatementRefused")<{ readonly error: SqlError }> {}

const mapStoreFaults =
  <X>(what: string, refused: (error: SqlError) => Effect.Effect<never, X>) =>
  <A, E, R>(effect: Effect.Effect<A, E | StoreFault, R>): Effect.Effect<A, Exclude<E, StoreFault> | Unavailable | X, R> =>
    Effect.catchAll(effect, (error): Effect.Effect<never, Exclude<E, StoreFault> | Unavailable | X> => {
      if (!isStoreFault(error)) return Effect.fail(error as Exclude<E, StoreFault>)
      switch (error._tag) {
        case "ParseError":
          return Effect.die(undecodable(what, error))
        case "NoSuchElementException":
          return Effect.die(error)
        case "SqlError":
          return refusedStatement(error)
            ? refused(error)
            : // The caller hears "unavailable"; the operator's log has what the store said.
              Effect.zipRight(Effect.logWarning(`${what}: store error`, error), Effect.fail(new Unavailable({ message: `The ${what} is unavailable; try again shortly` })))
      }
    })

/**
 * A repository method's failures, mapped once: a store that cannot answer reaches the caller as 503
 * `unavailable` ("The `what` is unavailable; try again shortly"), never as a 401 or a leaked driver
 * message; a statement the store refused for what it is, a row that does not decode or a missing
 * row a statement always returns, as a 500 (a defect: the operator's log has it), not as an outage
 * to wait out.
 */
export const storeErrors = (what: string) => mapStoreFaults(what, Effect.die)

/**
 * A driver's error on a statement sent without the SqlClient (the store's pool itself), ended as
 * `storeErrorsWithRefusals` ends one: StatementRefused where the store refused it, else Unavailable
 * (the driver's error is the `SqlError` to log).
 */
export const storeFailureOf = (what: string, cause: unknown): { readonly failure: StatementRefused | Unavailable; readonly error: SqlError } => {
  const error = new SqlError({ cause, message: `${what}: statement failed` })
  return { failure: refusedStatement(error) ? new StatementRefused({ error }) : new Unavailable({ message: `The ${what} is unavailable; try again shortly` }), error }
}

/** As storeErrors, but a statement the store refused fails with StatementRefused, for a caller that can do without it (one bad row of a batch). */
export const storeErrorsWithRefusals = (what: string) => mapStoreFaults(what, (error) => Effect.fail(new StatementRefused({ error })))

const isUniqueViolation = (error: unknown) => error instanceof SqlError && Predicate.hasProperty(error.cause, "code") && error.cause.code === "23505"

/** A unique-key violation (a name already taken) reaches the caller as 409 `conflict` with `message`. */
export const conflictOnDuplicate =
  (message: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | Conflict, R> =>
    Effect.catchIf(effect, isUniqueViolation, () => new Conflict({ message }))
