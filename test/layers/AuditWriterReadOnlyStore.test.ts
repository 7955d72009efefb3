import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Exit, Layer, Option } from "effect"
import { AuditWriter } from "../../layers/AuditWriter"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { StorePool } from "../../layers/StorePool"
import type { AuditInsert } from "../../src/repos/AuditInsert"
import { createTestDatabase, postgresAvailable, withAdminClient } from "../support/Servers"

/** From the attack review of the audit writer's plain insert (storeFailureOf): a store that cannot take writes for now is not the rows' fault. */
const hasPostgres = await postgresAvailable()
const database = hasPostgres ? await createTestDatabase() : undefined
afterAll(() => database?.drop())

const row = (requestId: string): AuditInsert => ({
  timestamp: 1, org_id: null, principal: null, key_id: null, user_id: null, event_type: "api", method: "GET", route: "/api/plan",
  status: 200, connection: null, sql: null, outcome: "success", block_reason: null, rows: null, duration_ms: 1, client_ip: null,
  user_agent: null, request_id: requestId, details: null
})

describe.skipIf(!hasPostgres)("AuditWriter when the store turns read-only (a failover to a standby, a managed store out of disk)", () => {
  const live = AuditWriter.Default.pipe(
    Layer.provideMerge(StoreLive),
    Layer.provide(AppConfig.Default),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", database?.url ?? ""]]))))
  )
  layer(live, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("a batch fails once as unavailable (503, try again), not row by row as refused rows (500 defects)", () =>
      Effect.gen(function* () {
        const writer = yield* AuditWriter
        const pool = yield* StorePool
        yield* writer.write([row("before")])
        // SQLSTATE 25006 read_only_sql_transaction, as a demoted primary or a store set read-only answers every INSERT.
        yield* Effect.promise(() =>
          withAdminClient(async (admin) => {
            await admin.query(`alter database ${database!.name} set default_transaction_read_only = on`)
            await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`, [database!.name])
          })
        )
        yield* Effect.sleep("200 millis")
        let statements = 0
        const query = pool.query.bind(pool) as (...args: Array<unknown>) => unknown
        ;(pool as unknown as { query: (...args: Array<unknown>) => unknown }).query = (...args) => {
          statements++
          return query(...args)
        }
        // Three requests answered in the same turn: one batch.
        const exits = yield* Effect.all([1, 2, 3].map((i) => Effect.exit(writer.write([row(`read-only-${i}`)]))), { concurrency: "unbounded" })
        const tags = exits.map((exit) => (Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause))?._tag : "committed"))
        // Taken as refused rows, the batch would be sent again row by row (4 statements for 3 rows, up to 501 for a full batch)
        // and every caller told StatementRefused, which Audit makes a defect (500).
        expect({ tags, statements }).toEqual({ tags: ["Unavailable", "Unavailable", "Unavailable"], statements: 1 })
      })
    )
  })
})
