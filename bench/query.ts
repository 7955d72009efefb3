/**
 * The same small query on the real PostgreSQL (a) straight through `pg` and (b) through
 * `POST /api/query` with governance on, at 1, 8 and 32 concurrent clients, with the gateway on
 * its embedded store and on PostgreSQL; then the SQL check alone on a 2 KB analytic query. Not a
 * test: prints Markdown for bench/README.md.
 *
 *   npm run bench:query [-- --seconds 8]
 */
import * as os from "node:os"
import { parseArgs } from "node:util"
import { Effect } from "effect"
import pg from "pg"
import { SqlGuard } from "../src/governance/sqlguard/SqlGuard"
import { localKey, startGateway } from "../test/support/Gateway"
import { createTestDatabase } from "../test/support/Servers"
import { comparisonCells, type Figures, measure, UNLIMITED } from "./support/Load"
import { addBenchConnection, createOrders, POINT_QUERY, restPointQuery } from "./support/PointQuery"
import { ANALYTIC } from "./support/Statements"

const { values } = parseArgs({ options: { seconds: { type: "string", default: "8" } } })
const seconds = Number(values.seconds)
const CLIENTS = [1, 8, 32]

const database = await createTestDatabase()
const storeDatabase = await createTestDatabase()
const rows: Array<string> = []
try {
  await createOrders(database)
  // Direct: the pool size the gateway uses (4), so the rows differ by the gateway alone.
  const pool = new pg.Pool({ connectionString: database.url, max: 4 })
  const direct = async () => {
    const result = await pool.query({ text: POINT_QUERY, rowMode: "array" })
    if (result.rows.length !== 1) throw new Error("direct: wrong row count")
  }
  const directFigures = new Map<number, Figures>()
  for (const clients of CLIENTS) directFigures.set(clients, await measure(clients, seconds, direct))
  await pool.end()

  for (const [store, databaseUrl] of [
    ["embedded", undefined],
    ["PostgreSQL", storeDatabase.url]
  ] as const) {
    const gateway = await startGateway({
      env: UNLIMITED,
      ...(databaseUrl ? { databaseUrl } : {})
    })
    try {
      const key = await localKey(gateway)
      await addBenchConnection(gateway, key, database)
      const rest = restPointQuery(gateway, key)
      for (const clients of CLIENTS) {
        const a = directFigures.get(clients)!
        const b = await measure(clients, seconds, rest.call)
        rows.push(
          `| ${store} | ${clients} | ${comparisonCells(a, b)}`
        )
        console.error(`${store}, ${clients} clients: direct ${Math.round(a.perSecond)}/s, gateway ${Math.round(b.perSecond)}/s`)
      }
      rest.close()
    } finally {
      await gateway.stop()
    }
  }
} finally {
  await database.drop()
  await storeDatabase.drop()
}

// The check alone: a 2 KB analytic query through each grammar.
const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))
const checkRows: Array<string> = []
for (const dbType of ["postgresql", "mysql", "snowflake", "duckdb"] as const) {
  const sql = dbType === "mysql" ? ANALYTIC.replace("percentile_cont(0.5) within group (order by r.lifetime)", "avg(r.lifetime)") : ANALYTIC
  const check = (text: string) => {
    const result = guard.check(text, dbType)
    if (result._tag === "Left") throw new Error(`${dbType}: ${result.left.reason}`)
  }
  const perStatement = (n: number, text: (i: number) => string) => {
    const started = performance.now()
    for (let i = 0; i < n; i++) check(text(i))
    return (((performance.now() - started) / n) * 1000).toFixed(0)
  }
  // A comment that differs on every call defeats the verdict memo: this is the parse itself.
  perStatement(200, (i) => `${sql}\n-- warm ${i}`)
  const fresh = perStatement(2000, (i) => `${sql}\n-- ${dbType} ${i}`)
  const repeated = perStatement(20000, () => sql)
  checkRows.push(`| ${dbType} | ${sql.length} | ${fresh} | ${repeated} |`)
}

console.log(`Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
console.log(`\`${POINT_QUERY}\` on PostgreSQL 15 (loopback), ${seconds} s per cell after a 1.5 s warm-up; clients in this process on the same 2 cores.\n`)
console.log("| gateway store | clients | direct pg q/s | gateway q/s | ratio | p50 ms direct / gateway | added p50 ms | p99 ms direct / gateway | added p99 ms |")
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (const row of rows) console.log(row)
console.log("\nThe read-only check alone (parse, walk, lexical guard, table list), new statements and a repeated one:\n")
console.log("| dialect | SQL chars | µs per new statement | µs per repeated statement |")
console.log("|---|---:|---:|---:|")
for (const row of checkRows) console.log(row)
