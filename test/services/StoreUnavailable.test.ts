import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Exit, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { Unavailable } from "../../src/domain/Errors"
import { storeUnavailable } from "../../src/services/StoreUnavailable"
import { postgresAvailable, TEST_PG_URL } from "../support/Servers"

const skip = !(await postgresAvailable())

/** Runs `sql` on a real PostgreSQL client at `url`, through storeUnavailable, and says how it ended. */
const outcome = (url: string, statement: string) =>
  Effect.runPromiseExit(
    Effect.scoped(
      Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(statement).pipe(storeUnavailable("thing"))).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(url), connectTimeout: "2 seconds" }))
      )
    )
  ).then((exit) =>
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
})
