/**
 * Sandboxes: create → first result, a trivial execute's round trip, a governed query from inside a
 * sandbox versus POST /api/query, and snapshot and resume of 100 MB of state, against a gateway
 * process on the embedded store with a PostgreSQL connection. Not a test: prints Markdown for
 * bench/README.md.
 *
 *   npm run bench:sandbox [-- --creates 20 --executes 300 --queries 200]
 */
import * as os from "node:os"
import { performance } from "node:perf_hooks"
import { parseArgs } from "node:util"
import { localKey, startGateway } from "../test/support/Gateway"
import { request } from "../test/support/Http"
import { createTestDatabase } from "../test/support/Servers"
import { UNLIMITED } from "./support/Load"

const { values } = parseArgs({ options: { creates: { type: "string", default: "20" }, executes: { type: "string", default: "300" }, queries: { type: "string", default: "200" } } })
const CREATES = Number(values.creates)
const EXECUTES = Number(values.executes)
const QUERIES = Number(values.queries)

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const summary = (samples: Array<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  const f = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(0))
  return `p50 ${f(percentile(sorted, 0.5))} ms, p99 ${f(percentile(sorted, 0.99))} ms (n=${samples.length})`
}

const database = await createTestDatabase()
await database.query("create table orders (id int primary key, total numeric); insert into orders select g, g * 1.5 from generate_series(1, 1000) g")
const gateway = await startGateway({ env: { ...UNLIMITED, SP_NOTEBOOK_IDLE_SNAPSHOT_SECONDS: "2" } })
try {
  const key = await localKey(gateway)
  const api = async (route: string, body?: unknown, method?: string) => {
    const res = await request(gateway.url, route, { key, ...(body === undefined ? {} : { body }), ...(method === undefined ? {} : { method }) })
    if (res.status >= 300) throw new Error(`${route}: ${res.status} ${res.text}`)
    return res.json
  }
  await api("/api/connections", { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" })
  await api("/api/query", { connection_name: "pg", sql: "select 1" })

  const firstResult: Array<number> = []
  for (let i = 0; i < CREATES; i++) {
    const started = performance.now()
    const { id } = await api("/api/sandboxes", {})
    await api(`/api/sandboxes/${id}/execute`, { code: "print(1)" })
    firstResult.push(performance.now() - started)
    await api(`/api/sandboxes/${id}`, undefined, "DELETE")
  }

  const { id } = await api("/api/sandboxes", { connection_name: "pg", timeout_seconds: 600 })
  const trivial: Array<number> = []
  for (let i = 0; i < EXECUTES; i++) {
    const started = performance.now()
    await api(`/api/sandboxes/${id}/execute`, { code: "x = 1" })
    trivial.push(performance.now() - started)
  }

  const SQL = "select id, total from orders where id = 42"
  const inside = await api(`/api/sandboxes/${id}/execute`, {
    code: `import sluice, time\ntimes = []\nfor _ in range(${QUERIES}):\n  t = time.perf_counter()\n  sluice.query(${JSON.stringify(SQL)})\n  times.append((time.perf_counter() - t) * 1000)\nprint(' '.join('%.3f' % t for t in times))`
  })
  const fromInside = inside.stdout.trim().split(" ").map(Number)
  const rest: Array<number> = []
  for (let i = 0; i < QUERIES; i++) {
    const started = performance.now()
    await api("/api/query", { connection_name: "pg", sql: SQL })
    rest.push(performance.now() - started)
  }

  // 100 MB of state: a bytes object and a numpy array, then idle until the snapshot, then the execute that resumes it.
  await api(`/api/sandboxes/${id}/execute`, { code: "import numpy\nblob = bytes(50 * 1024 * 1024)\narr = numpy.ones(50 * 1024 * 1024 // 8)" })
  const snapshots: Array<number> = []
  const resumes: Array<number> = []
  for (let cycle = 0; cycle < 3; cycle++) {
    const idleFrom = performance.now()
    let record = await api(`/api/sandboxes/${id}`)
    while (record.status !== "snapshotted") {
      await new Promise((resolve) => setTimeout(resolve, 20))
      record = await api(`/api/sandboxes/${id}`)
    }
    // Snapshotting starts 2 s (the idle setting) after the last execute; what is past it is the snapshot.
    snapshots.push(performance.now() - idleFrom - 2000)
    const started = performance.now()
    const resumed = await api(`/api/sandboxes/${id}/execute`, { code: "print(len(blob) + arr.nbytes)" })
    resumes.push(performance.now() - started)
    if (resumed.stdout.trim() !== String(100 * 1024 * 1024)) throw new Error(`state lost: ${JSON.stringify(resumed)}`)
  }
  const record = await api(`/api/sandboxes/${id}`)

  console.log(`### Sandboxes (${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version})\n`)
  console.log("| measure | figure | goal |\n|---|---|---|")
  console.log(`| create → first result (POST /api/sandboxes, then execute \`print(1)\`) | ${summary(firstResult)} | ≤ 150 ms p50 |`)
  console.log(`| trivial execute round trip (\`x = 1\`, over HTTP) | ${summary(trivial)} | ≤ 10 ms p50 |`)
  console.log(`| governed point query from inside (\`sluice.query\`, timed in Python) | ${summary(fromInside)} | — |`)
  console.log(`| the same query over POST /api/query (from Node) | ${summary(rest)} | — |`)
  console.log(`| idle snapshot of 100 MB of globals (${(record.snapshot_bytes / 1024 / 1024).toFixed(0)} MiB pickled; from idle deadline to \`snapshotted\`, 20 ms polling) | ${summary(snapshots)} | ≤ 1 s |`)
  console.log(`| resume of it (the execute that resumes, over HTTP) | ${summary(resumes)} | ≤ 1 s |`)
} finally {
  await gateway.stop()
  await database.drop()
}
