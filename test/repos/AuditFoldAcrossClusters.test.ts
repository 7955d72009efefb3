import { execFileSync } from "node:child_process"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, ManagedRuntime } from "effect"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { OrgId } from "../../src/domain/Ids"
import { AuditRepo } from "../../src/repos/AuditRepo"
import { rawAuditStats, seedAuditRows } from "../support/AuditRows"
import { tempDataDir } from "../support/Gateway"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

/**
 * From the attack review of 0024_audit_rollups_folded: the fold compares the transaction ids rows carry
 * with a snapshot of the cluster the store runs on. A restore onto another cluster, and a transaction
 * left open elsewhere on the same cluster.
 */
const hasPostgres = await postgresAvailable()
const HOUR = 3600
const DAY = 24 * HOUR
const ORG = OrgId.make("org_fold_attack")

const storeOn = (env: Record<string, string>) =>
  ManagedRuntime.make(
    AuditRepo.Default.pipe(
      Layer.provideMerge(StoreLive),
      Layer.provide(AppConfig.Default),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
    )
  )

const row = (timestamp: number, request_id: string) => ({
  timestamp, org_id: ORG, principal: "key:sp_new", key_id: "key_new", user_id: null, event_type: "api", method: "GET",
  route: "/api/plan", status: 200, connection: null, sql: null, outcome: "success" as const, block_reason: null, rows: null,
  duration_ms: 1, client_ip: null, user_agent: null, request_id, details: null
})

const databases: Array<TestDatabase> = []
const runtimes: Array<ManagedRuntime.ManagedRuntime<unknown, unknown>> = []
afterAll(async () => {
  for (const runtime of runtimes) await runtime.dispose()
  for (const database of databases) await database.drop()
})

describe.skipIf(!hasPostgres)("audit rollups folded by transaction snapshot", () => {
  it("a store restored from a pg_dump onto a younger cluster still counts the audit rows written after the restore", async () => {
    // The source: a PostgreSQL store that has been busy (its transaction ids are in the hundreds of thousands on the test server).
    const source = await createTestDatabase()
    databases.push(source)
    const from = storeOn({ DATABASE_URL: source.url })
    runtimes.push(from as never)
    const now = Math.floor(Date.now() / 1000)
    await from.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* Effect.promise(() => seedAuditRows((text, params) => Effect.runPromise(sql.unsafe(text, params)), ORG, 2_000, now - 2 * DAY, now - HOUR, "old"))
        yield* Effect.flatMap(AuditRepo, (repo) => repo.fold())
      })
    )
    // The operator's backup of the audit tables (README: "Take a backup before upgrading"), as INSERTs.
    const dump = execFileSync("pg_dump", ["--data-only", "--inserts", "--no-owner", "-t", "gateway_audit*", source.url], { encoding: "utf8", maxBuffer: 1 << 28 })
      .split("\n")
      .filter((line) => !line.startsWith("\\")) // psql's \restrict lines
      .join("\n")

    // The target: a fresh store (here the embedded one: a new cluster whose transaction ids start low), migrated, the backup loaded.
    const to = storeOn({ SP_DATA_DIR: tempDataDir() })
    runtimes.push(to as never)
    const { stats, raw, folded } = await to.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* AuditRepo
        yield* sql`delete from gateway_audit_fold`
        yield* sql.unsafe(dump)
        // The dump's session settings (search_path, row_security) are left on the store's one connection: put back.
        yield* sql.unsafe(`reset all`)
        // The gateway goes on: a request's audit row, then the fold loop's turn.
        yield* repo.insertBatch([row(now - 60, "after-restore")])
        const folded = yield* repo.fold()
        const since = now - 3 * DAY + 1234
        const stats = yield* repo.stats(ORG, since)
        const raw = yield* Effect.promise(() => rawAuditStats((text, params) => Effect.runPromise(sql.unsafe(text, params)), ORG, since))
        return { stats, raw, folded }
      })
    )
    expect(raw.total).toBe(2_001)
    // The new row's txid is behind the restored snapshot's: the fold sees another cluster's rows and rebuilds the rollups from them all.
    expect({ total: stats.totals.total, folded }).toEqual({ total: 2_001, folded: 2_001 })
  }, 120_000)

  it("a write transaction left open in another database of the same cluster neither stops the fold nor makes stats read the window's rows", async () => {
    const store = await createTestDatabase()
    const neighbour = await createTestDatabase()
    databases.push(store, neighbour)
    const runtime = storeOn({ DATABASE_URL: store.url })
    runtimes.push(runtime as never)
    await runtime.runPromise(Effect.void)
    // Some other application on the same PostgreSQL server, with a transaction open (an xid assigned) for a while.
    const other = new pg.Client({ connectionString: neighbour.url })
    await other.connect()
    try {
      await other.query("begin")
      await other.query("create table busy (id int)")
      const now = Math.floor(Date.now() / 1000)
      const ROWS = 40_000
      await seedAuditRows(store.query, ORG, ROWS, now - 7 * DAY, now, "pinned")
      await store.query("analyze gateway_audit_logs")
      const since = now - 7 * DAY + 1234
      const { folded, reads, stats } = await runtime.runPromise(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const repo = yield* AuditRepo
          const folded = yield* repo.fold()
          return yield* sql.withTransaction(
            Effect.gen(function* () {
              const tuplesRead = sql<{ tuples: number }>`select (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int as tuples
                from pg_stat_xact_user_tables where relname = 'gateway_audit_logs'`.pipe(Effect.map((rows) => rows[0]?.tuples ?? 0))
              const before = yield* tuplesRead
              const stats = yield* repo.stats(ORG, since)
              return { folded, stats, reads: (yield* tuplesRead) - before }
            })
          )
        })
      )
      expect(stats.totals.total).toBeGreaterThan(ROWS * 0.8)
      console.log(`fold added ${folded}; stats read ${reads} audit rows`)
      const partialHour = Number(
        (await store.query(`select count(*) as n from gateway_audit_logs where org_id = $1 and "timestamp" >= $2 and "timestamp" < $3`, [ORG, since, Math.ceil(since / HOUR) * HOUR]))[0].n
      )
      // A fold by the cluster's oldest running xid alone would be pinned by the neighbour's transaction: it would add nothing,
      // and every stats call would read the whole window from the log (three times), as before the rollups.
      expect({ folded, readsAtMost3xPartialHour: reads <= 3 * partialHour + 100 }).toEqual({ folded: ROWS, readsAtMost3xPartialHour: true })
    } finally {
      await other.query("rollback").catch(() => undefined)
      await other.end()
    }
  }, 120_000)
})
