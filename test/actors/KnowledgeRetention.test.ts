import { SqlClient } from "@effect/sql"
import { ConfigProvider, type Duration, Effect, Layer, TestClock, TestContext } from "effect"
import { describe, expect, it } from "vitest"
import { KnowledgeRetentionLoop } from "../../actors/loops/KnowledgeRetentionLoop"
import { Foundation } from "../../app/Foundation"
import { Leases } from "../../layers/Leases"
import { KnowledgeRepo } from "../../src/repos/KnowledgeRepo"
import { tempDataDir } from "../support/Gateway"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const skip = !(await postgresAvailable())
const DAY = 86_400_000
const T0 = Date.parse("2026-06-01T00:00:00Z")

/**
 * Waits until `check` holds, in real time (up to 20 s, for a loaded machine), moving the loop's
 * clock (the test's) on by `step` each time: the loop sleeps again only once its store work is
 * done, so one long jump would leave its next run past the jump's end.
 */
const until = <A>(read: Effect.Effect<A, unknown>, check: (value: A) => boolean, step?: Duration.DurationInput) =>
  Effect.gen(function* () {
    for (let i = 0; i < 400; i++) {
      const value = yield* read
      if (check(value)) return value
      if (step !== undefined) yield* TestClock.adjust(step)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
    }
    return yield* Effect.dieMessage("the retention loop did not get there")
  })

describe("knowledge retention: retrieval events older than 90 days are pruned by a leased hourly loop (issue 20)", () => {
  it.skipIf(skip)("prunes what the loop's clock says is past 90 days, and nothing newer", async () => {
    const db = await createTestDatabase()
    try {
      // A day's lease renews every 8 hours: moving the test's clock on by days runs the loop's steps, not thousands of renewals.
      const env = ConfigProvider.fromMap(new Map([["DATABASE_URL", db.url], ["SP_DATA_DIR", tempDataDir()], ["SP_LEASE_TTL_SECONDS", "86400"]]))
      const foundation = Foundation.pipe(Layer.provide(Layer.setConfigProvider(env)))
      const program = Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* TestClock.setTime(T0)
        yield* sql`insert into knowledge_entries (id, org_id, scope, category, title, body, status, bytes, created_by, updated_by)
          values ('kn_1', 'org_a', 'org', 'context', 'kept', 'body', 'active', 4, 'test', 'test')`
        const at = (ms: number) => new Date(ms)
        for (const [query, when] of [["old", at(T0 - 100 * DAY)], ["recent", at(T0 - 89 * DAY)], ["later", at(T0 + DAY)]] as const) {
          yield* sql`insert into knowledge_retrievals (org_id, entry_id, source, query, rank, score, principal, retrieved_at)
            values ('org_a', 'kn_1', 'rest', ${query}, 1, 1, 'test', ${when})`
        }
        const left = sql<{ query: string }>`select query from knowledge_retrievals order by retrieved_at`.pipe(Effect.map((rows) => rows.map((row) => row.query)))

        yield* Layer.build(KnowledgeRetentionLoop.pipe(Layer.provide(Layer.mergeAll(KnowledgeRepo.Default, Leases.Default))))
        // Its first run, at once: only what is over 90 days old by its clock.
        expect(yield* until(left, (rows) => rows.length === 2)).toEqual(["recent", "later"])
        // Hour by hour, run by run: "recent" goes once it is past 90 days old (a day on); "later" stays.
        expect(yield* until(left, (rows) => rows.length === 1, "1 hour")).toEqual(["later"])
        expect(yield* TestClock.currentTimeMillis).toBeGreaterThan(T0 + DAY)
      })
      // The store is built on the live clock; the loop runs on the test's.
      await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(TestContext.TestContext), Effect.provide(foundation)))
    } finally {
      await db.drop()
    }
  }, 60_000)
})
