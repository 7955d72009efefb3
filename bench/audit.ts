/**
 * Audit stats as the log grows: a gateway on a PostgreSQL store with 60,000 and then 150,000 audit
 * rows of its org spread over the last 24 hours (as a busy day or a soak leaves them), with
 * `GET /api/audit/stats` for 24 hours and 7 days timed sequentially from one client, and the store
 * blocks (shared buffers hit or read, audit tables and their indexes) one stats call touches.
 * Not a test: prints Markdown for bench/README.md.
 *
 *   npm run bench:audit [-- --requests 200]
 */
import * as os from "node:os"
import { performance } from "node:perf_hooks"
import { parseArgs } from "node:util"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, ManagedRuntime } from "effect"
import { AppConfig } from "../layers/AppConfig"
import { StoreLive } from "../layers/Store"
import { OrgId } from "../src/domain/Ids"
import { AuditRepo } from "../src/repos/AuditRepo"
import { seedAuditRows } from "../test/support/AuditRows"
import { localKey, startGateway } from "../test/support/Gateway"
import { request } from "../test/support/Http"
import { createTestDatabase } from "../test/support/Servers"
import { UNLIMITED } from "./support/Load"

const { values } = parseArgs({ options: { requests: { type: "string", default: "200" } } })
const REQUESTS = Number(values.requests)
const SIZES = [60_000, 150_000]

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const ms = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(0))

const database = await createTestDatabase()
const gateway = await startGateway({ databaseUrl: database.url, env: UNLIMITED })
const runtime = ManagedRuntime.make(
  AuditRepo.Default.pipe(
    Layer.provideMerge(StoreLive),
    Layer.provide(AppConfig.Default),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", database.url]]))))
  )
)
/** Blocks of the audit tables and their indexes one stats call touches, from its own transaction's counters. */
const blocksTouched = (org: string, since: number) =>
  runtime.runPromise(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* AuditRepo
      const blocks = sql<{ n: number }>`select sum(pg_stat_get_xact_blocks_fetched(oid))::int as n
        from pg_class where relname like 'gateway_audit%'`.pipe(Effect.map((r) => r[0]!.n))
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const before = yield* blocks
          yield* repo.stats(OrgId.make(org), since)
          return (yield* blocks) - before
        })
      )
    })
  )
const rows: Array<string> = []
try {
  const key = await localKey(gateway)
  const org = (await database.query(`select id from organizations`))[0].id as string
  let seeded = 0
  for (const size of SIZES) {
    const now = Math.floor(Date.now() / 1000)
    await seedAuditRows(database.query, org, size - seeded, now - 86_400, now, `bench-${size}`)
    seeded = size
    await database.query(`vacuum analyze`)
    for (const hours of [24, 168]) {
      const route = `/api/audit/stats?hours=${hours}`
      for (let i = 0; i < 20; i++) await request(gateway.url, route, { key })
      const samples: Array<number> = []
      for (let i = 0; i < REQUESTS; i++) {
        const started = performance.now()
        const res = await request(gateway.url, route, { key })
        samples.push(performance.now() - started)
        if (res.status !== 200) throw new Error(res.text)
      }
      const sorted = samples.sort((a, b) => a - b)
      const blocks = await blocksTouched(org, Math.floor(Date.now() / 1000) - hours * 3600)
      rows.push(`| ${size.toLocaleString("en")} | ${hours} | ${ms(percentile(sorted, 0.5))} | ${ms(percentile(sorted, 0.99))} | ${blocks} |`)
      console.error(`${size} rows, ${hours} h: p50 ${ms(percentile(sorted, 0.5))} ms`)
    }
  }
} finally {
  await runtime.dispose()
  await gateway.stop()
  await database.drop()
}

const cpus = os.cpus()
console.log(`Machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
console.log(`Gateway on a PostgreSQL store on loopback; ${REQUESTS} sequential requests per row after 20 warm-up.\n`)
console.log("| audit rows of the org (last 24 h) | hours | p50 ms | p99 ms | store blocks per call |")
console.log("|---:|---:|---:|---:|---:|")
console.log(rows.join("\n"))
