/**
 * First query on a cold pool and steady-state queries, through Sluice's connector layer (session
 * guards, row cap, cancel-on-timeout) and through the bare driver, for PostgreSQL and MariaDB, in one
 * run. Not a test: prints a Markdown table for bench/README.md.
 *
 *   npm run bench:connect [-- --queries 2000 --cold 20]
 */
import * as os from "node:os"
import { parseArgs } from "node:util"
import { Effect, Exit, Scope } from "effect"
import mysql from "mysql2/promise"
import pg from "pg"
import type { ConnectorPool } from "../layers/connectors/Connector"
import { openTarget } from "../layers/connectors/ConnectorPools"
import type { ConnectionInput } from "../src/domain/Connection"
import { createTestDatabase, mysqlAvailable, postgresAvailable, TEST_MYSQL_URL } from "../test/support/Servers"

const { values } = parseArgs({ options: { queries: { type: "string", default: "2000" }, cold: { type: "string", default: "20" } } })
const QUERIES = Number(values.queries)
const COLD = Number(values.cold)
const SQL = "select id, name from bench_rows order by id limit 10"

interface Subject {
  readonly open: () => Promise<{ query: () => Promise<unknown>; close: () => Promise<void> }>
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

const timeEach = async (n: number, f: () => Promise<unknown>) => {
  const samples: Array<number> = []
  for (let i = 0; i < n; i++) {
    const started = performance.now()
    await f()
    samples.push(performance.now() - started)
  }
  return samples.sort((a, b) => a - b)
}

/** Cold: open a pool and run the first query, COLD times. Steady: QUERIES sequential queries on one warm pool. */
const measure = async (subject: Subject) => {
  const cold = await timeEach(COLD, async () => {
    const pool = await subject.open()
    await pool.query()
    await pool.close()
  })
  const pool = await subject.open()
  await timeEach(200, pool.query)
  const cpu = process.cpuUsage()
  const steady = await timeEach(QUERIES, pool.query)
  const used = process.cpuUsage(cpu)
  await pool.close()
  return { cold, steady, cpuUs: (used.user + used.system) / QUERIES }
}

/** The connector layer, opened and used exactly as the gateway does. */
const throughConnector = (connection: ConnectionInput): Subject => ({
  open: async () => {
    const scope = Effect.runSync(Scope.make())
    const pool: ConnectorPool = await Effect.runPromise(
      Scope.extend(openTarget({ orgId: "bench", connectionId: "bench", version: 1, connection, secrets: [] }), scope)
    )
    return {
      query: () => Effect.runPromise(pool.query(SQL, { timeoutMs: 30_000, maxRows: 1000 })),
      close: () => Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
})

const barePg = (database: string): Subject => ({
  open: async () => {
    const pool = new pg.Pool({ host: "127.0.0.1", port: 5432, user: "root", database, max: 4 })
    return { query: () => pool.query({ text: SQL, rowMode: "array" }), close: () => pool.end() }
  }
})

const bareMysql = (database: string): Subject => ({
  open: async () => {
    const url = new URL(TEST_MYSQL_URL)
    const pool = mysql.createPool({ host: url.hostname, port: Number(url.port || 3306), user: decodeURIComponent(url.username), database, connectionLimit: 4 })
    return { query: () => pool.query({ sql: SQL, rowsAsArray: true }), close: () => pool.end() }
  }
})

const rows: Array<string> = []
const report = (server: string, path: string, result: Awaited<ReturnType<typeof measure>>) =>
  rows.push(
    `| ${server} | ${path} | ${percentile(result.cold, 0.5).toFixed(2)} | ${percentile(result.steady, 0.5).toFixed(3)} | ` +
      `${percentile(result.steady, 0.99).toFixed(3)} | ${result.cpuUs.toFixed(0)} |`
  )

if (await postgresAvailable()) {
  const db = await createTestDatabase()
  await db.query("create table bench_rows (id int primary key, name text); insert into bench_rows select g, 'row ' || g from generate_series(1, 100) g")
  const connection: ConnectionInput = { name: "bench", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: db.name, username: "root" }
  report("PostgreSQL 15", "bare pg Pool", await measure(barePg(db.name)))
  report("PostgreSQL 15", "Sluice connector", await measure(throughConnector(connection)))
  await db.drop()
}

if (await mysqlAvailable()) {
  const name = `sluice_bench_${process.pid}`
  const admin = await mysql.createConnection({ uri: TEST_MYSQL_URL })
  await admin.query(`create database ${name}`)
  await admin.query(`create table ${name}.bench_rows (id int primary key, name text)`)
  await admin.query(`insert into ${name}.bench_rows select seq, concat('row ', seq) from seq_1_to_100`)
  const url = new URL(TEST_MYSQL_URL)
  const connection: ConnectionInput = {
    name: "bench",
    db_type: "mysql",
    host: url.hostname,
    port: Number(url.port || 3306),
    username: decodeURIComponent(url.username),
    database: name
  }
  report("MariaDB 10.11", "bare mysql2 pool", await measure(bareMysql(name)))
  report("MariaDB 10.11", "Sluice connector", await measure(throughConnector(connection)))
  await admin.query(`drop database ${name}`)
  await admin.end()
}

const cpus = os.cpus()
console.log(`Run on ${new Date().toISOString().slice(0, 10)}, machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`)
console.log(`${COLD} cold opens, ${QUERIES} sequential steady-state queries (after 200 warm-up), query: \`${SQL}\`\n`)
console.log("| server | path | cold first query p50 ms | steady p50 ms | steady p99 ms | client CPU µs/query |")
console.log("|---|---|---:|---:|---:|---:|")
for (const row of rows) console.log(row)
process.exit(0)
