/**
 * Authenticated `GET /api/keys` against the same server's `/health`, on the embedded store and on
 * PostgreSQL, in one run. Not a test: prints a Markdown table for bench/README.md.
 *
 *   npm run bench:auth [-- --seconds 10 --connections 8]
 */
import * as os from "node:os"
import { parseArgs } from "node:util"
import autocannon from "autocannon"
import pg from "pg"
import { localKey, startGateway } from "../test/support/Gateway"
import { createTestDatabase, postgresAvailable } from "../test/support/Servers"

const { values } = parseArgs({ options: { seconds: { type: "string", default: "10" }, connections: { type: "string", default: "8" } } })
const seconds = Number(values.seconds)
const connections = Number(values.connections)
const UNLIMITED = { SP_RATE_LIMIT_GENERAL_RPM: "1000000000", SP_RATE_LIMIT_AUTH_RPM: "1000000000" }

const measure = async (url: string, headers: Record<string, string> = {}) => {
  await autocannon({ url, connections, duration: 2, headers })
  const result = await autocannon({ url, connections, duration: seconds, headers })
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`)
  return result
}

/** The floor under every store-backed request: one sequential `select 1` through the pg driver, wall and CPU per call. */
const storeRoundTrip = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    for (let i = 0; i < 500; i++) await client.query("select 1")
    const n = 5000
    const cpu = process.cpuUsage()
    const started = performance.now()
    for (let i = 0; i < n; i++) await client.query("select 1")
    const used = process.cpuUsage(cpu)
    return { wallUs: ((performance.now() - started) / n) * 1000, cpuUs: (used.user + used.system) / n }
  } finally {
    await client.end()
  }
}

const rows: Array<string> = []
let floor = ""
const run = async (store: string, databaseUrl?: string) => {
  const gateway = await startGateway({ env: UNLIMITED, ...(databaseUrl ? { databaseUrl } : {}) })
  try {
    const key = await localKey(gateway)
    for (const [label, path, headers] of [
      ["GET /health (baseline)", "/health", {}],
      ["GET /api/keys (loopback, no key)", "/api/keys", {}],
      ["GET /api/keys (x-api-key)", "/api/keys", { "x-api-key": key }]
    ] as const) {
      const r = await measure(`${gateway.url}${path}`, headers)
      rows.push(`| ${store} | ${label} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} |`)
      console.error(`${store} ${label}: ${Math.round(r.requests.average)} req/s`)
    }
  } finally {
    await gateway.stop()
  }
}

await run("embedded (PGlite)")
if (await postgresAvailable()) {
  const database = await createTestDatabase()
  try {
    await run("PostgreSQL 15 (loopback)", database.url)
    const trip = await storeRoundTrip(database.url)
    floor = `One \`select 1\` round trip through the pg driver on this machine: ${trip.wallUs.toFixed(0)} µs wall, ${trip.cpuUs.toFixed(0)} µs client CPU.`
  } finally {
    await database.drop()
  }
}

console.log(`Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
console.log(`autocannon, ${connections} connections, ${seconds} s per row after a 2 s warm-up; load generator on the same 2 cores.\n`)
console.log("| store | request | req/s | p50 ms | p99 ms |")
console.log("|---|---|---:|---:|---:|")
for (const row of rows) console.log(row)
if (floor) console.log(`\n${floor}`)
