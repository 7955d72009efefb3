import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ModelReply, type ModelRequest, startModelFake } from "../../fakes/ModelFake"
import { type GatewayProcess, localKey, startGateway, tempDataDir } from "../../support/Gateway"
import { evalSetUp } from "../../support/EvalSet"
import { eventually } from "../../support/Eventually"
import { request } from "../../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../support/Servers"

const skip = !(await postgresAvailable())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const MANIFEST = `name: failover
tasks:
  - { id: one, class: read, prompt: "TASK one: how many orders?", checks: [{ name: n, type: number, gold: 42 }] }
  - { id: two, class: read, prompt: "TASK two: how many orders?", checks: [{ name: n, type: number, gold: 42 }] }
  - { id: three, class: write, prompt: "TASK three: build order_count", checks: [{ name: built, type: exists, model: order_count }] }
`

describe.skipIf(skip)("an eval run whose runner is killed -9: resumed within its lease, failed after it (issue 31)", () => {
  let store: TestDatabase
  let data: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let gateway: GatewayProcess
  let env: Record<string, string>
  let admin: string
  let work: string
  let release: () => void = () => {}
  let held: Promise<void> = Promise.resolve()
  // The restarted gateway is the same installation: its workspace repositories and evidence are where the killed one left them.
  const dataDir = tempDataDir()

  const script = async (req: ModelRequest): Promise<ModelReply> => {
    await held
    if (req.raw.includes("TASK three") && req.toolResults.length === 0) return { toolCalls: [{ name: "branch_sql", args: { sql: "create table order_count as select count(*) as n from orders" } }] }
    return { text: "There are 42 orders." }
  }
  const hold = () => (held = new Promise((resolve) => (release = resolve)))
  const runOf = (id: string) => request(gateway.url, `/api/evals/runs/${id}`, { key: admin }).then((r) => r.json)
  const until = async (id: string, done: (run: any) => boolean, ms: number) => {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      const run = await runOf(id)
      if (done(run)) return run
      await sleep(200)
    }
    throw new Error(`run ${id} is still ${JSON.stringify(await runOf(id))}`)
  }
  const taskKeys = async () => (await store.query("select count(*)::int as n from api_keys where name like 'eval %'"))[0].n as number
  /** The databases of the run's branches (its copy of the warehouse, its write task's), as the store records them. */
  const branchDatabases = async (id: string) => (await store.query("select database_name from db_branches where owner_job = $1", [id])).map((r: any) => r.database_name as string)
  const databasesLeft = async (names: ReadonlyArray<string>) => (await data.query("select datname from pg_database where datname = any($1)", [names])).map((r: any) => r.datname)

  beforeAll(async () => {
    store = await createTestDatabase()
    data = await createTestDatabase()
    await data.query("create table orders (id int primary key, total numeric); insert into orders select g, g from generate_series(1, 42) g")
    fake = await startModelFake((req) => script(req))
    work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-evalfailover-"))
    env = {
      SP_LLM_PROVIDER: "anthropic",
      SP_LLM_BASE_URL: fake.url,
      SP_LLM_API_KEY: "sk-ant-test-failover",
      SP_LLM_MODEL: "claude-sonnet-4-5",
      SP_PER_KEY_RPM: "100000",
      SP_PER_ORG_RPM: "100000",
    }
    gateway = await startGateway({ databaseUrl: store.url, dataDir, env })
    admin = (await request(gateway.url, "/api/keys", { key: await localKey(gateway), body: { name: "staff", scopes: ["read", "query", "write", "admin"] } })).json.key
    await evalSetUp(gateway.url, admin, data.name, work, MANIFEST)
  }, 120_000)
  afterAll(async () => {
    release()
    await gateway?.kill()
    await fake?.close()
    await store?.drop()
    await data?.drop()
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true })
  })

  /** Starts a run whose agent turns wait, and waits until both its tasks are with the agent (their keys made). */
  const startHeld = async () => {
    hold()
    const started = await request(gateway.url, "/api/evals/runs", { key: admin, body: {} })
    expect(started.status, started.text).toBe(202)
    await until(started.json.id, (run) => run.tasks.every((t: any) => t.phase === "agent"), 30_000)
    expect(await taskKeys()).toBe(3)
    return started.json.id as string
  }

  it("a runner killed mid-run and back within the lease: the run resumes where it was and completes", async () => {
    const id = await startHeld()
    const runsOn = async () => (await store.query("select started_on from eval_runs where id = $1", [id]))[0].started_on as string
    const killed = await runsOn()
    await gateway.kill()
    gateway = await startGateway({ databaseUrl: store.url, dataDir, env })
    // The resumed run counts among the new process's runs in flight: one more may start, not two (attack 37 F7).
    const deadline = Date.now() + 30_000
    while ((await runsOn()) === killed && Date.now() < deadline) await sleep(200)
    expect(await runsOn()).not.toBe(killed)
    const second = await request(gateway.url, "/api/evals/runs", { key: admin, body: { task_ids: ["one"] } })
    expect(second.status, second.text).toBe(202)
    const third = await request(gateway.url, "/api/evals/runs", { key: admin, body: { task_ids: ["one"] } })
    expect(third.status, third.text).toBe(409)
    release()
    await until(second.json.id, (r) => r.status !== "running" && r.status !== "queued", 60_000)
    const run = await until(id, (r) => r.status !== "running", 60_000)
    expect(run.status, JSON.stringify(run.error)).toBe("completed")
    expect(run.tasks.map((t: any) => t.verdict)).toEqual(["CORRECT", "CORRECT", "CORRECT"])
    expect(await taskKeys()).toBe(0)
    // Deleted just after the run's row says it ended.
    await eventually(() => branchDatabases(id), (left) => left.length === 0, "the run's branches deleted")
  }, 120_000)

  it("a runner killed mid-run with no runner for 180 s: the run is failed at the next start, its keys revoked", async () => {
    const id = await startHeld()
    const databases = await branchDatabases(id)
    expect(databases.length).toBe(2)
    expect(await databasesLeft(databases)).toHaveLength(2)
    await gateway.kill()
    // 180 s without a runner, without waiting them out: the lease the dead runner held is set to have expired.
    await store.query("update eval_runs set lease_expires_at = now() - interval '1 second' where id = $1", [id])
    gateway = await startGateway({ databaseUrl: store.url, dataDir, env })
    const run = await until(id, (r) => r.status !== "running", 30_000)
    expect(run).toMatchObject({ status: "failed", error: { code: "lease_expired" } })
    expect(await taskKeys()).toBe(0)
    // No eval branch is left: its records, nor their databases on the warehouse's server.
    await eventually(() => branchDatabases(id), (left) => left.length === 0, "the run's branches deleted")
    expect(await databasesLeft(databases)).toEqual([])
    // The tasks' agent runs stop: their key opens nothing.
    release()
    const deadline = Date.now() + 30_000
    let statuses: Array<string> = []
    while (Date.now() < deadline) {
      statuses = (await store.query("select status from agent_runs where id = any($1)", [run.tasks.map((t: any) => t.agent_run_id)])).map((r: any) => r.status)
      if (statuses.every((s) => s !== "running" && s !== "queued")) break
      await sleep(200)
    }
    // Each has ended: failed at its next step for want of its key, or (when its last model call was under way as the key went) answered without another tool call.
    expect(statuses.every((status) => status === "failed" || status === "completed")).toBe(true)
  }, 120_000)
})
