/**
 * Soak: a real gateway process under mixed load for minutes (governed queries, schema reads, audit
 * reads, key and connection changes) from closed-loop clients, sampling every 10 s the throughput,
 * p50 and p99 of that window and the gateway's RSS. The RSS at the end must be within 20 % of the
 * RSS after warm-up (the first fifth of the run, at least one sample); the script exits 1 otherwise.
 * The gateway runs with a sized heap (`--heap-mib`, 512 by default; 0 for Node's own limit, a
 * quarter of this machine's memory): V8 collects lazily below its limit, so with Node's 4 GiB RSS
 * follows the collector's timing, not what the gateway keeps. Not a test: prints Markdown for
 * bench/README.md.
 *
 *   npm run bench:soak [-- --minutes 5 --clients 8 --store embedded|postgresql --heap-mib 512]
 */
import * as fs from "node:fs"
import * as os from "node:os"
import { parseArgs } from "node:util"
import { localKey, startGateway } from "../test/support/Gateway"
import { request } from "../test/support/Http"
import { createTestDatabase } from "../test/support/Servers"
import { UNLIMITED } from "./support/Load"
import { addBenchConnection, createOrders, POINT_QUERY } from "./support/PointQuery"

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "5" },
    clients: { type: "string", default: "8" },
    store: { type: "string", default: "embedded" },
    "heap-mib": { type: "string", default: "512" }
  }
})
const MINUTES = Number(values.minutes)
const CLIENTS = Number(values.clients)
const STORE = values.store
const HEAP_MIB = Number(values["heap-mib"])
if (!(MINUTES > 0) || !(CLIENTS > 0) || (STORE !== "embedded" && STORE !== "postgresql") || !(HEAP_MIB >= 0)) {
  console.error("usage: npm run bench:soak -- [--minutes 5] [--clients 8] [--store embedded|postgresql] [--heap-mib 512]")
  process.exit(2)
}
const SAMPLE_MS = 10_000
const SAMPLES = Math.max(2, Math.round((MINUTES * 60_000) / SAMPLE_MS))
const WARM_UP_SAMPLES = Math.max(1, Math.round(SAMPLES / 5))
const RSS_LIMIT = 1.2

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0)
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024

type Call = (path: string, options?: { method?: string; body?: unknown }) => Promise<any>

/** The mix, by weight: each operation is one or more requests, each timed on its own. */
const operations: Array<{ readonly name: string; readonly weight: number; readonly run: (call: Call, n: number) => Promise<void> }> = [
  { name: "point query", weight: 35, run: (call) => call("/api/query", { body: { connection_name: "bench", sql: POINT_QUERY } }) },
  {
    name: "1,000-row query",
    weight: 10,
    run: (call) => call("/api/query", { body: { connection_name: "bench", sql: "select id, total, note from orders order by id" } })
  },
  {
    name: "schema read",
    weight: 15,
    run: (call, n) => call(["/api/connections/bench/schema/compact", "/api/connections/bench/schema/overview", "/api/connections/bench/schema/search?q=order"][n % 3]!)
  },
  { name: "audit read", weight: 15, run: (call, n) => call(n % 2 === 0 ? "/api/audit?limit=50" : "/api/audit/stats") },
  {
    name: "key change",
    weight: 12,
    run: async (call, n) => {
      const created = await call("/api/keys", { body: { name: `soak-${n}`, scopes: ["read"] } })
      await call(`/api/keys/${created.id}`, { method: "DELETE" })
    }
  },
  {
    name: "connection change",
    weight: 13,
    run: async (call, n) => {
      const name = `soak_${n}`
      await call("/api/connections", { body: { ...benchConnection, name } })
      await call(`/api/connections/${name}`, { method: "PUT", body: { ...benchConnection, name, description: `soak ${n}` } })
      await call(`/api/connections/${name}`, { method: "DELETE" })
    }
  }
]
const totalWeight = operations.reduce((sum, op) => sum + op.weight, 0)
const pick = (n: number) => {
  let at = (n * 7919) % totalWeight
  for (const op of operations) {
    if (at < op.weight) return op
    at -= op.weight
  }
  return operations[0]!
}

let benchConnection: Record<string, unknown> = {}
const database = await createTestDatabase()
const storeDatabase = STORE === "postgresql" ? await createTestDatabase() : null
const rows: Array<string> = []
let verdict = ""
let failed = false
try {
  await createOrders(database)
  benchConnection = { db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
  const env = { ...UNLIMITED, SP_RATE_LIMIT_AUTH_RPM: "1000000000", ...(HEAP_MIB > 0 ? { NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}` } : {}) }
  const gateway = await startGateway({ env, ...(storeDatabase ? { databaseUrl: storeDatabase.url } : {}) })
  try {
    const key = await localKey(gateway)
    await addBenchConnection(gateway, key, database)
    const pid = gateway.process.pid!

    let window: Array<number> = []
    let errors = 0
    const errorSamples: Array<string> = []
    const call: Call = async (path, options = {}) => {
      const started = performance.now()
      const res = await request(gateway.url, path, { key, ...(options.method ? { method: options.method } : {}), ...(options.body !== undefined ? { body: options.body } : {}) })
      window.push(performance.now() - started)
      if (res.status >= 300) {
        errors++
        if (errorSamples.length < 5) errorSamples.push(`${options.method ?? (options.body ? "POST" : "GET")} ${path}: ${res.status} ${res.text.slice(0, 200)}`)
        throw new Error(`${res.status}`)
      }
      return res.json
    }

    let stop = false
    let sequence = 0
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (!stop) {
        const n = sequence++
        await pick(n).run(call, n).catch(() => undefined)
      }
    })

    const started = Date.now()
    let afterWarmUp = 0
    let end = 0
    for (let sample = 1; sample <= SAMPLES; sample++) {
      await new Promise((r) => setTimeout(r, started + sample * SAMPLE_MS - Date.now()))
      const latencies = window.sort((a, b) => a - b)
      const windowErrors = errors
      window = []
      errors = 0
      const rss = rssOf(pid)
      if (sample === WARM_UP_SAMPLES) afterWarmUp = rss
      end = rss
      const row = `| ${sample * 10}${sample <= WARM_UP_SAMPLES ? " (warm-up)" : ""} | ${Math.round(latencies.length / (SAMPLE_MS / 1000))} | ${percentile(latencies, 0.5).toFixed(1)} | ${percentile(latencies, 0.99).toFixed(1)} | ${windowErrors} | ${mib(rss)} | ${os.loadavg()[0]!.toFixed(1)} |`
      rows.push(row)
      console.error(row)
    }
    stop = true
    await Promise.all(clients)
    const growth = end / afterWarmUp
    failed = growth > RSS_LIMIT || errorSamples.length > 0
    verdict =
      `RSS after warm-up ${mib(afterWarmUp)} MiB, at the end ${mib(end)} MiB: ${growth >= 1 ? "+" : ""}${((growth - 1) * 100).toFixed(1)} % ` +
      `(limit +${Math.round((RSS_LIMIT - 1) * 100)} %): ${growth > RSS_LIMIT ? "FAIL" : "pass"}. ${sequence} operations.` +
      (errorSamples.length > 0 ? `\nFailed requests (first ${errorSamples.length}):\n${errorSamples.join("\n")}` : "")
  } finally {
    await gateway.stop()
  }
} finally {
  await database.drop()
  await storeDatabase?.drop()
}

const cpus = os.cpus()
console.log(`Machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
console.log(
  `Gateway on the ${STORE === "embedded" ? "embedded store (PGlite)" : "PostgreSQL store on loopback"}, ${HEAP_MIB > 0 ? `heap limit ${HEAP_MIB} MiB` : "Node's default heap limit"}, customer database PostgreSQL on loopback; ` +
    `${CLIENTS} closed-loop clients for ${MINUTES} min; mix by weight: ${operations.map((op) => `${op.name} ${op.weight}`).join(", ")}.\n`
)
// The machine's load average says how much of a dip in throughput is other work on the same cores.
console.log("| t (s) | requests/s | p50 ms | p99 ms | failed | RSS MiB | machine load (1 min) |")
console.log("|---:|---:|---:|---:|---:|---:|---:|")
console.log(rows.join("\n"))
console.log(`\n${verdict}`)
process.exit(failed ? 1 : 0)
