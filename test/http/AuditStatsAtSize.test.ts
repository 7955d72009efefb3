import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { OrgId } from "../../src/domain/Ids"
import { AuditRepo } from "../../src/repos/AuditRepo"
import { type AuditStatsShape, rawAuditStats, seedAuditRows } from "../support/AuditRows"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const ROWS = 150_000
const DAY = 86_400

describe.skipIf(!hasPostgres)("audit stats on a 150k-row log (PostgreSQL store)", () => {
  let database: TestDatabase
  let gateway: Gateway
  let key: string
  let org: string
  let now: number
  let runtime: ManagedRuntime.ManagedRuntime<AuditRepo | SqlClient.SqlClient, unknown>

  const maxId = async () => String((await database.query(`select coalesce(max(id), 0)::text as id from gateway_audit_logs`))[0].id)

  beforeAll(async () => {
    database = await createTestDatabase()
    gateway = await startApp({ databaseUrl: database.url })
    key = await localKey(gateway)
    org = (await database.query(`select id from organizations`))[0].id
    now = Math.floor(Date.now() / 1000)
    // Eight days up to ten minutes ahead (a replica's clock may run ahead), another org's and unattributed rows beside.
    await seedAuditRows(database.query, org, ROWS, now - 8 * DAY, now + 600, "bulk")
    await seedAuditRows(database.query, "org_other", 20_000, now - 8 * DAY, now, "other")
    await seedAuditRows(database.query, null, 5_000, now - 8 * DAY, now, "anonymous")
    // As the gateway's fold loop does within seconds: the seeded rows go into the rollups.
    await database.query(`select gateway_audit_fold()`)
    await database.query(`analyze gateway_audit_logs`)
    runtime = ManagedRuntime.make(
      Layer.mergeAll(AuditRepo.Default).pipe(
        Layer.provideMerge(StoreLive),
        Layer.provide(AppConfig.Default),
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", database.url]]))))
      )
    )
  }, 120_000)
  afterAll(async () => {
    await runtime?.dispose()
    await gateway?.stop()
    await database?.drop()
  })

  it("GET /api/audit/stats for 24 hours and 7 days gives the counts of the rows themselves", async () => {
    for (const hours of [24, 168]) {
      const before = await maxId()
      const res = await request(gateway.url, `/api/audit/stats?hours=${hours}`, { key })
      expect(res.status, res.text).toBe(200)
      const stats = res.json as AuditStatsShape
      expect(stats.since % 3600, "the window starts mid-hour, so its first hour is partial").not.toBe(0)
      expect(stats).toEqual(await rawAuditStats(database.query, org, stats.since, before))
      expect(stats.total).toBeGreaterThan((ROWS / 8) * (hours / 24) * 0.9)
      expect(stats.top_keys).toHaveLength(10)
      expect(stats.block_reasons).toHaveLength(20)
    }
  })

  it("reads the rows of the window's first partial hour and one rollup row per hour and group, not the window's rows", async () => {
    for (const hours of [24, 168]) {
      const since = now - hours * 3600 + 1234
      const firstFullHour = Math.ceil(since / 3600) * 3600
      const { stats, fold, reads } = await runtime.runPromise(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const repo = yield* AuditRepo
          return yield* sql.withTransaction(
            Effect.gen(function* () {
              // This session's counters not yet flushed: tuples each table gave to scans, index and sequential.
              const tuplesRead = sql<{ relname: string; tuples: number }>`select relname::text as relname,
                  (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int as tuples
                from pg_stat_xact_user_tables where relname like 'gateway_audit%'`.pipe(
                Effect.map((rows) => new Map(rows.map((r) => [r.relname, r.tuples])))
              )
              const fold = (yield* sql<{ folded: string; through: string }>`select folded::text as folded, through_id::text as through from gateway_audit_fold`)[0]!
              const before = yield* tuplesRead
              const stats = yield* repo.stats(OrgId.make(org), since)
              const after = yield* tuplesRead
              return { stats, fold, reads: Object.fromEntries([...after].map(([name, n]) => [name, n - (before.get(name) ?? 0)])) }
            })
          )
        })
      )
      const partialHourRows = Number(
        (await database.query(`select count(*) as n from gateway_audit_logs where org_id = $1 and "timestamp" >= $2 and "timestamp" < $3`, [
          org,
          since,
          firstFullHour
        ]))[0].n
      )
      // The gateway's own rows since the seeded ones were folded, every org's, as the index finds them (a fold meanwhile only makes them fewer).
      const unfoldedRows = Number(
        (await database.query(
          `select count(*) as n from gateway_audit_logs where id > $1 and not pg_visible_in_snapshot(txid, $2::pg_snapshot)`,
          [fold.through, fold.folded]
        ))[0].n
      )
      const windowRows = Number((await database.query(`select count(*) as n from gateway_audit_logs where org_id = $1 and "timestamp" >= $2`, [org, since]))[0].n)
      console.log(`${hours} h: ${windowRows} rows in the window, ${partialHourRows} in its first partial hour, ${unfoldedRows} not folded; tuples read`, reads)
      // Each of the hourly series, the keys and the block reasons may read the partial hour and the rows not folded yet once.
      expect(unfoldedRows).toBeLessThan(100)
      // (One row of slack each: the running gateway may write a row between the reads and the count.)
      expect(reads["gateway_audit_logs"] ?? 0).toBeLessThanOrEqual(3 * (partialHourRows + unfoldedRows + 1))
      const hoursRead = hours + 1
      const rollupRows = Object.entries(reads)
        .filter(([name]) => name !== "gateway_audit_logs")
        .reduce((n, [, tuples]) => n + tuples, 0)
      // Per hour at most: one counts row, 13 keys × 5 principals (theirs, three users, none), 26 block reasons.
      expect(rollupRows).toBeLessThanOrEqual(hoursRead * (1 + 13 * 5 + 26))
      expect(rollupRows + (reads["gateway_audit_logs"] ?? 0)).toBeLessThan(windowRows / 4)
      expect(stats.hourly.reduce((n, h) => n + h.success + h.refused + h.error, 0)).toBe(windowRows)
    }
  })
})
