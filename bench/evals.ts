/**
 * Evaluation runs: one run of `--tasks` read tasks (default 200) with the scripted fake model (no
 * latency) through a real gateway process, its own runner, against a PostgreSQL warehouse. Three
 * tasks in four are answered in words (a number check), one in four by a query (a table check whose
 * gold is SQL the task's key runs). Measures the run's wall time and tasks/s (goal: 200 tasks in
 * 60 s on two cores), task time p50/p99, the CPU time of grading one task from its stored evidence,
 * and the export of a large run (the run's evidence with `--export-mib` more added, default 240):
 * its bytes, time, and the gateway's RSS before and at its peak while the zip streams. Not a test:
 * prints Markdown for bench/README.md.
 *
 * With `--profile` the gateway runs under `node --cpu-prof` and its profile is summarized per task.
 *
 *   npm run bench:evals [-- --tasks 200 --parallel 4 --export-mib 240 --store embedded|postgresql --profile]
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { Schema } from "effect"
import { gradeStored, StoredEvidence } from "../src/domain/grading/StoredEvidence"
import { startModelFake } from "../test/fakes/ModelFake"
import { localKey, startGateway, tempDataDir } from "../test/support/Gateway"
import { git } from "../test/support/Git"
import { request } from "../test/support/Http"
import { createTestDatabase } from "../test/support/Servers"
import { type CpuProfile, summarizeProfile } from "./support/CpuProfile"
import { UNLIMITED } from "./support/Load"

const { values } = parseArgs({
  options: { tasks: { type: "string", default: "200" }, parallel: { type: "string", default: "4" }, "export-mib": { type: "string", default: "240" }, profile: { type: "boolean", default: false }, store: { type: "string", default: "embedded" } }
})
const TASKS = Number(values.tasks)
const PARALLEL = Number(values.parallel)
const EXPORT_MIB = Number(values["export-mib"])
const STORE = values.store
if (!(TASKS >= 1 && TASKS <= 200) || !(PARALLEL >= 1 && PARALLEL <= 32) || !(EXPORT_MIB >= 0) || (STORE !== "embedded" && STORE !== "postgresql")) {
  console.error("usage: npm run bench:evals -- [--tasks 200 (1-200)] [--parallel 4] [--export-mib 240] [--store embedded|postgresql] [--profile]")
  process.exit(2)
}
const TOP_SQL = "select customer_id, count(*) as orders from orders group by customer_id order by customer_id"
const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
const rssMib = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const manifest = [
  "name: bench",
  "tasks:",
  ...Array.from({ length: TASKS }, (_, i) =>
    i % 4 === 3
      ? `  - { id: t${i}, class: read, prompt: "TABLE ${i}: orders per customer?", checks: [{ name: per_customer, type: table, gold_sql: "${TOP_SQL}" }] }`
      : `  - { id: t${i}, class: read, prompt: "NUMBER ${i}: the total of all orders?", checks: [{ name: total, type: number, gold: 9030 }] }`
  )
].join("\n")

const warehouse = await createTestDatabase()
await warehouse.query(`create table orders (id int primary key, customer_id int, total numeric);
  insert into orders select g, 1 + g % 2, g * 10 from generate_series(1, 42) g;`)
const fake = await startModelFake((req) =>
  /TABLE \d+/.test(req.raw)
    ? req.toolResults.length === 0
      ? { toolCalls: [{ name: "query_database", args: { connection_name: "wh", sql: TOP_SQL } }] }
      : { text: "Here they are." }
    : { text: "All orders come to $9,030." }
)
const storeDatabase = STORE === "postgresql" ? await createTestDatabase() : null
const dataDir = tempDataDir()
const work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-bench-evals-"))
const profileDir = values.profile ? fs.mkdtempSync(path.join(os.tmpdir(), "sluice-evals-profile-")) : null
const gateway = await startGateway({
  ...(profileDir !== null ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] } : {}),
  dataDir,
  ...(storeDatabase === null ? {} : { databaseUrl: storeDatabase.url }),
  env: { ...UNLIMITED, SP_EVAL_MAX_PARALLEL_TASKS: String(PARALLEL), SP_LLM_PROVIDER: "anthropic", SP_LLM_BASE_URL: fake.url, SP_LLM_API_KEY: "sk-ant-bench", SP_LLM_MODEL: "claude-sonnet-4-5" }
})
try {
  const key = (await request(gateway.url, "/api/keys", { key: await localKey(gateway), body: { name: "bench", scopes: ["read", "query", "write", "admin"] } })).json.key
  const connection = { name: "wh", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: warehouse.name, username: "root" }
  if ((await request(gateway.url, "/api/connections", { key, body: connection })).status !== 201) throw new Error("connection refused")
  const projectId = (await request(gateway.url, "/api/workspace-projects", { key, body: { name: "evals" } })).json.id
  await git(["clone", "-q", `${gateway.url.replace("http://", `http://git:${key}@`)}/git/${projectId}.git`, "repo"], work)
  const repo = path.join(work, "repo")
  fs.writeFileSync(path.join(repo, "eval.yaml"), manifest)
  await git(["add", "-A"], repo)
  await git(["commit", "-q", "-m", "set"], repo)
  await git(["push", "-q", "origin", "HEAD:main"], repo)
  const config = { runner_profile: "python-sandbox", connection_name: "wh", max_tasks: 200, eval_set: { kind: "repository", workspace_project_id: projectId, path: ".", ref: null } }
  const saved = await request(gateway.url, "/api/evals/config", { key, method: "PUT", body: config })
  if (saved.status !== 200) throw new Error(saved.text)

  const posted = performance.now()
  const started = await request(gateway.url, "/api/evals/runs", { key, body: {} })
  if (started.status !== 202) throw new Error(started.text)
  const startMs = performance.now() - posted
  let run: any
  for (;;) {
    run = (await request(gateway.url, `/api/evals/runs/${started.json.id}`, { key })).json
    if (["completed", "failed", "cancelled"].includes(run.status)) break
    await sleep(100)
  }
  const seconds = (performance.now() - posted) / 1000
  const taskMs = run.tasks.map((t: any) => new Date(t.ended_at).getTime() - new Date(t.started_at).getTime()).sort((a: number, b: number) => a - b)

  // Grading alone, from each task's stored evidence, as a regrade does it.
  const runDir = path.join(dataDir, "objects/objects/evals/local", run.id)
  const stored = run.tasks.map((t: any) => Schema.decodeUnknownSync(StoredEvidence)(JSON.parse(fs.readFileSync(path.join(runDir, `tasks/task_${t.task_id}/evidence.json`), "utf8"))))
  for (const evidence of stored) gradeStored(evidence)
  const gradeStarted = process.cpuUsage()
  const ROUNDS = 20
  for (let r = 0; r < ROUNDS; r++) for (const evidence of stored) gradeStored(evidence)
  const gradeCpu = process.cpuUsage(gradeStarted)
  const gradeUs = (gradeCpu.user + gradeCpu.system) / (ROUNDS * stored.length)

  // A large run's export: its evidence plus EXPORT_MIB of incompressible files, streamed while the gateway's RSS is sampled.
  for (let i = 0; i < Math.ceil(EXPORT_MIB / 30); i++) {
    const mib = Math.min(30, EXPORT_MIB - i * 30)
    fs.writeFileSync(path.join(runDir, `tasks/task_t${i}/transcript.json`), randomBytes(mib * 1024 * 1024))
  }
  const pid = gateway.process.pid!
  const rssBefore = rssMib(pid)
  let rssPeak = rssBefore
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMib(pid))), 20)
  const exportStarted = performance.now()
  const response = await fetch(`${gateway.url}/api/evals/runs/${run.id}/export`, { headers: { authorization: `Bearer ${key}` } })
  let bytes = 0
  for await (const chunk of response.body!) bytes += (chunk as Uint8Array).length
  const exportSeconds = (performance.now() - exportStarted) / 1000
  clearInterval(sampler)

  const cpus = os.cpus()
  console.log(`Machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
  console.log(`One run of ${TASKS} read tasks (3 in 4 answered in words, 1 in 4 by a query with gold SQL), SP_EVAL_MAX_PARALLEL_TASKS=${PARALLEL}, fake model without latency, ${STORE} store, PostgreSQL warehouse.\n`)
  console.log("| run s | tasks/s | status | CORRECT | POST ms | task p50 / p99 ms | grading per task µs CPU | export MiB in s | gateway RSS before → peak MiB |")
  console.log("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
  console.log(
    `| ${seconds.toFixed(1)} | ${(TASKS / seconds).toFixed(1)} | ${run.status} | ${run.verdicts.CORRECT} | ${startMs.toFixed(0)} | ${percentile(taskMs, 0.5)} / ${percentile(taskMs, 0.99)} | ${gradeUs.toFixed(0)} | ${(bytes / 2 ** 20).toFixed(0)} in ${exportSeconds.toFixed(1)} | ${rssBefore.toFixed(0)} → ${rssPeak.toFixed(0)} |`
  )
  // A task that is not CORRECT says why: every task of the bench has a right answer.
  for (const task of run.tasks.filter((t: any) => t.verdict !== "CORRECT")) console.log(`- ${task.task_id}: ${task.verdict} — ${task.detail ?? ""}`)
} finally {
  await gateway.stop()
  await fake.close()
  await warehouse.drop()
  await storeDatabase?.drop()
  fs.rmSync(work, { recursive: true, force: true })
}
if (profileDir !== null) {
  const file = fs.readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"))
  if (file === undefined) throw new Error(`the gateway wrote no profile to ${profileDir}`)
  console.log(`\nProfile in ${path.join(profileDir, file)}\n`)
  console.log(summarizeProfile(JSON.parse(fs.readFileSync(path.join(profileDir, file), "utf8")) as CpuProfile, TASKS, "task"))
}
process.exit(0)
