/**
 * Agent runs as jobs: many scripted runs against the fake model (no latency) through a real
 * gateway process, which is also the runner. Each run is one tool call between two model calls.
 * Measures runs per second, the time from a run's POST to its first event on a server-sent event
 * stream followed from the start (p50/p99), event delivery (an event's arrival at the client
 * after the store recorded it), and the gateway's RSS after warm-up and at the end. Not a test:
 * prints Markdown for bench/README.md.
 *
 * The gateway runs with a sized heap (`--heap-mib`, 512 by default, 0 for Node's own), as in
 * bench:soak: below a large limit V8 collects lazily and RSS follows the collector, not what is kept.
 *
 * With `--profile` the gateway runs under `node --cpu-prof` and its profile is summarized per run.
 *
 *   npm run bench:jobs [-- --runs 1000 --concurrency 50 --store embedded|postgresql --poll-ms 500 --heap-mib 512 --profile]
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { startModelFake } from "../test/fakes/ModelFake"
import { localKey, startGateway } from "../test/support/Gateway"
import { request } from "../test/support/Http"
import { createTestDatabase } from "../test/support/Servers"
import { followSse } from "../test/support/Sse"
import { type CpuProfile, summarizeProfile } from "./support/CpuProfile"
import { UNLIMITED } from "./support/Load"

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "1000" },
    concurrency: { type: "string", default: "50" },
    store: { type: "string", default: "embedded" },
    "poll-ms": { type: "string", default: "500" },
    "heap-mib": { type: "string", default: "512" },
    profile: { type: "boolean", default: false }
  }
})
const RUNS = Number(values.runs)
const CONCURRENCY = Number(values.concurrency)
const STORE = values.store
const POLL_MS = Number(values["poll-ms"])
const HEAP_MIB = Number(values["heap-mib"])
if (!(RUNS > 0) || !(CONCURRENCY > 0) || (STORE !== "embedded" && STORE !== "postgresql") || !(POLL_MS >= 50) || !(HEAP_MIB >= 0)) {
  console.error("usage: npm run bench:jobs -- [--runs 1000] [--concurrency 50] [--store embedded|postgresql] [--poll-ms 500] [--heap-mib 512]")
  process.exit(2)
}
const WARM_UP = Math.min(50, RUNS)

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
const rssMib = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024

const fake = await startModelFake((req) =>
  req.toolResults.length === 0 ? { toolCalls: [{ name: "list_connections", args: {} }] } : { text: "done" }
)
const storeDatabase = STORE === "postgresql" ? await createTestDatabase() : null
const profileDir = values.profile ? fs.mkdtempSync(path.join(os.tmpdir(), "sluice-jobs-profile-")) : null
const gateway = await startGateway({
  ...(profileDir !== null ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] } : {}),
  env: { ...UNLIMITED, SP_RATE_LIMIT_AUTH_RPM: "1000000000", SP_JOB_POLL_MS: String(POLL_MS), ...(HEAP_MIB > 0 ? { NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}` } : {}), SP_LLM_PROVIDER: "openai-compatible", SP_LLM_BASE_URL: `${fake.url}/v1`, SP_LLM_MODEL: "bench" },
  ...(storeDatabase ? { databaseUrl: storeDatabase.url } : {})
})

interface Timing {
  readonly firstEventMs: number
  readonly totalMs: number
  readonly deliveryMs: ReadonlyArray<number>
  readonly completed: boolean
}

const runOnce = async (key: string, i: number): Promise<Timing> => {
  const posted = Date.now()
  const started = await request(gateway.url, "/api/agent-runs", { key, body: { prompt: `run ${i}` } })
  if (started.status !== 202) throw new Error(`start failed: ${started.status} ${started.text}`)
  const followed = followSse(gateway.url, `/api/agent-runs/${started.json.id}/events`, key)
  const arrivals: Array<number> = []
  const seen = followed.events.length
  const watch = setInterval(() => {
    while (arrivals.length < followed.events.length - seen) arrivals.push(Date.now())
  }, 1)
  await followed.ended
  clearInterval(watch)
  while (arrivals.length < followed.events.length) arrivals.push(Date.now())
  // Delivery of the recorded events (their created_at is the store's); the streamed text has no time of its own.
  const deliveryMs = followed.events.flatMap((event, n) => (event.id === null ? [] : [arrivals[n]! - new Date(event.data.created_at).getTime()]))
  return {
    firstEventMs: (arrivals[0] ?? Date.now()) - posted,
    totalMs: Date.now() - posted,
    deliveryMs,
    completed: followed.events.at(-1)?.event === "completed"
  }
}

const failures: Array<string> = []

const runAll = async (key: string, count: number, offset: number) => {
  const timings: Array<Timing> = []
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, count) }, async () => {
      while (next < count) {
        const i = next++
        // A refused or dropped request counts as a run that did not complete; the gateway's state is reported below.
        timings.push(await runOnce(key, offset + i).catch((error: Error) => {
          failures.push(error.message)
          return { firstEventMs: 0, totalMs: 0, deliveryMs: [], completed: false }
        }))
      }
    })
  )
  return timings
}

try {
  const key = await localKey(gateway)
  const pid = gateway.process.pid!
  await runAll(key, WARM_UP, 0)
  const rssBefore = rssMib(pid)
  const started = performance.now()
  const timings = await runAll(key, RUNS, WARM_UP)
  const seconds = (performance.now() - started) / 1000
  const rssAfter = rssMib(pid)
  const finished = timings.filter((t) => t.totalMs > 0)
  const firsts = finished.map((t) => t.firstEventMs).sort((a, b) => a - b)
  const totals = finished.map((t) => t.totalMs).sort((a, b) => a - b)
  const deliveries = finished.flatMap((t) => t.deliveryMs).sort((a, b) => a - b)
  const cpus = os.cpus()
  console.log(`Machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
  console.log(`${RUNS} runs (after ${WARM_UP} warm-up), ${CONCURRENCY} at a time, ${STORE} store, SP_JOB_POLL_MS=${POLL_MS}, heap ${HEAP_MIB > 0 ? `${HEAP_MIB} MiB` : "Node's default"}; each run: model call, tool call (list_connections), model call.\n`)
  console.log("| runs/s | completed | POST → first event p50 / p99 ms | run p50 / p99 ms | event delivery p50 / p99 ms | RSS after warm-up → end MiB |")
  console.log("|---:|---:|---:|---:|---:|---:|")
  console.log(
    `| ${(RUNS / seconds).toFixed(1)} | ${timings.filter((t) => t.completed).length} | ${percentile(firsts, 0.5)} / ${percentile(firsts, 0.99)} | ${percentile(totals, 0.5)} / ${percentile(totals, 0.99)} | ${percentile(deliveries, 0.5)} / ${percentile(deliveries, 0.99)} | ${rssBefore.toFixed(0)} → ${rssAfter.toFixed(0)} |`
  )
  if (failures.length > 0) console.log(`\n${failures.length} requests failed (${[...new Set(failures)].join("; ")}); gateway ${gateway.process.exitCode === null ? "still running" : `exited ${gateway.process.exitCode}`}`)
} finally {
  await gateway.stop()
  await fake.close()
  await storeDatabase?.drop()
}
if (profileDir !== null) {
  const file = fs.readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"))
  if (file === undefined) throw new Error(`the gateway wrote no profile to ${profileDir}`)
  console.log(`\nProfile in ${path.join(profileDir, file)}\n`)
  console.log(summarizeProfile(JSON.parse(fs.readFileSync(path.join(profileDir, file), "utf8")) as CpuProfile, RUNS + WARM_UP, "run"))
}
