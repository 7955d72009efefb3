import { SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Exit, Option, Redacted, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Conflict, Unavailable } from "../../src/domain/Errors"
import { conflictOnDuplicate, isStoreOutage, storeErrors } from "../../src/repos/StoreErrors"
import { postgresAvailable, TEST_PG_URL } from "../support/Servers"

const skip = !(await postgresAvailable())

/** Runs `run` with a real PostgreSQL client at `url`. */
const exitOf = <A, E>(url: string, run: (sql: PgClient.PgClient) => Effect.Effect<A, E>) =>
  Effect.runPromiseExit(
    Effect.scoped(Effect.flatMap(PgClient.PgClient, run).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), connectTimeout: "2 seconds" }))))
  )

/** Runs `sql` on a real PostgreSQL client at `url`, through storeErrors, and says how it ended. */
const outcome = (url: string, statement: string) =>
  exitOf(url, (sql) => sql.unsafe(statement).pipe(storeErrors("thing"))).then((exit) =>
    Exit.isSuccess(exit)
      ? "ok"
      : Cause.failureOption(exit.cause)._tag === "Some"
        ? (Cause.failureOption(exit.cause) as { value: unknown }).value instanceof Unavailable
          ? "unavailable"
          : "other failure"
        : Cause.isDie(exit.cause)
          ? "defect"
          : "other"
  )

describe("store errors: an outage is unavailable, a refused statement is not", () => {
  it.skipIf(skip)("a value the store cannot take (22P02) is a defect (500), not an outage to wait out", async () => {
    expect(await outcome(TEST_PG_URL, "select 'x'::int")).toBe("defect")
    expect(await outcome(TEST_PG_URL, "select * from no_such_table_anywhere")).toBe("defect")
  })

  it.skipIf(skip)("a statement the store cancelled (57014) and a session the store ended are unavailable", async () => {
    expect(await outcome(TEST_PG_URL, "set statement_timeout = 20; select pg_sleep(1)")).toBe("unavailable")
    // The session ended under the statement (57P01), as when the store restarts.
    expect(await outcome(TEST_PG_URL, "select pg_terminate_backend(pg_backend_pid())")).toBe("unavailable")
  })

  it.skipIf(skip)("a store that cannot take writes now (25006 read-only, 55P03 a lock not available) is unavailable, not a refused statement", async () => {
    expect(await outcome(TEST_PG_URL, "begin read only; create table store_errors_never_made (n int); commit")).toBe("unavailable")
    expect(await outcome(TEST_PG_URL, "do $$ begin raise exception using errcode = '55P03'; end $$")).toBe("unavailable")
    // A raise of our own (P0001) is about the statement.
    expect(await outcome(TEST_PG_URL, "do $$ begin raise exception 'no'; end $$")).toBe("defect")
  })

  it.skipIf(skip)("a row that does not decode is a defect naming the field, never its value", async () => {
    const exit = await exitOf(TEST_PG_URL, (sql) =>
      SqlSchema.findAll({ Request: Schema.Void, Result: Schema.Struct({ amount: Schema.Number }), execute: () => sql`select 'secret-value' as amount` })(undefined).pipe(
        storeErrors("thing")
      )
    )
    const defect = Exit.isFailure(exit) ? Cause.dieOption(exit.cause) : Option.none()
    expect(Option.isSome(defect)).toBe(true)
    const message = String(Option.getOrThrow(defect))
    expect(message).toContain("amount")
    expect(message).not.toContain("secret-value")
  })

  it.skipIf(skip)("a unique violation (23505) is a conflict with the caller's message", async () => {
    const exit = await exitOf(TEST_PG_URL, (sql) =>
      sql
        .unsafe("create temp table taken (name text primary key); insert into taken values ('a'); insert into taken values ('a')")
        .pipe(conflictOnDuplicate('"a" is taken'), storeErrors("thing"))
    )
    const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
    expect(Option.getOrNull(failure)).toEqual(new Conflict({ message: '"a" is taken' }))
  })

  it.skipIf(skip)("what a job's step waits out and does again: an outage, raw or mapped, never a refused statement", async () => {
    const raw = async (url: string, statement: string) => {
      const exit = await exitOf(url, (sql) => sql.unsafe(statement))
      return Exit.isFailure(exit) ? Option.getOrNull(Cause.failureOption(exit.cause)) : null
    }
    // No server there: the client cannot open a session (no SQLSTATE), as when a loaded pool times out.
    expect(isStoreOutage(await raw("postgres://root@127.0.0.1:1/postgres", "select 1"))).toBe(true)
    expect(isStoreOutage(await raw(TEST_PG_URL, "set statement_timeout = 20; select pg_sleep(1)"))).toBe(true)
    expect(isStoreOutage(new Unavailable({ message: "The thing is unavailable; try again shortly" }))).toBe(true)
    expect(isStoreOutage(await raw(TEST_PG_URL, "select 'x'::int"))).toBe(false)
    expect(isStoreOutage(new Conflict({ message: "taken" }))).toBe(false)
  })
})
