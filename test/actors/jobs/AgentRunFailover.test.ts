import type { ChildProcess } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest"
import { type ModelReply, type ModelRequest, startModelFake } from "../../fakes/ModelFake"
import { type GatewayProcess, localKey, startGateway, startWorker } from "../../support/Gateway"
import { request } from "../../support/Http"
import { followSse } from "../../support/Sse"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../support/Servers"

const skip = !(await postgresAvailable())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
// Takeover must not wait out the lock: the default SP_JOB_LOCK_SECONDS (15) is kept.
const TAKEOVER_MS = 5_000

const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null

describe("agent runs survive a runner's death: two gateways and a worker on one PostgreSQL (issue 19)", () => {
  let store: TestDatabase
  let data: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let gateways: Array<GatewayProcess> = []
  let worker: Awaited<ReturnType<typeof startWorker>>
  let script: (request: ModelRequest) => ModelReply | Promise<ModelReply> = () => ({ text: "unscripted" })
  let key: string
  let env: Record<string, string> = {}

  beforeAll(async () => {
    if (skip) return
    store = await createTestDatabase()
    data = await createTestDatabase()
    await data.query("create table orders (id int primary key, total numeric); insert into orders select g, g from generate_series(1, 42) g")
    fake = await startModelFake((req) => script(req))
    env = {
      SP_LLM_PROVIDER: "openai-compatible",
      SP_LLM_BASE_URL: `${fake.url}/v1`,
      SP_LLM_MODEL: "local-model",
      SP_JOB_POLL_MS: "100",
      SP_PER_KEY_RPM: "100000",
      SP_RATE_LIMIT_EXPENSIVE_RPM: "100000",
      SP_ENCRYPTION_KEY: "failover-test-encryption-key-0123456789",
      SP_ENCRYPTION_SALT: "failover-test-salt"
    }
    gateways = [await startGateway({ databaseUrl: store.url, env }), await startGateway({ databaseUrl: store.url, env })]
    worker = await startWorker({ ...env, DATABASE_URL: store.url })
    const admin = await localKey(gateways[0]!)
    key = (await request(gateways[0]!.url, "/api/keys", { key: admin, body: { name: "runner", scopes: ["read", "query", "agent:run"] } })).json.key
    const connection = { name: "shop", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: data.name, username: "root" }
    expect((await request(gateways[0]!.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
  }, 90_000)
  afterAll(async () => {
    for (const gateway of gateways) await gateway.kill()
    worker?.process.kill("SIGKILL")
    await fake?.close()
    await store?.drop()
    await data?.drop()
  })

  const living = () => gateways.find((g) => alive(g.process))!
  const run = (id: string) => request(living().url, `/api/agent-runs/${id}`, { key }).then((r) => r.json)
  const ended = async (id: string, ms: number) => {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      const current = await run(id)
      if (["completed", "failed", "cancelled"].includes(current.status)) return current
      await sleep(100)
    }
    throw new Error(`run ${id} is still ${JSON.stringify(await run(id))}`)
  }

  it.skipIf(skip)("the model's text streams to followers on every gateway, whichever process runs the run (Chat Completions streaming)", async () => {
    const answer = "There are 42 orders, numbered 1 to 42."
    // The answer starts once the followers are surely listening: a piece sent before would not reach them.
    script = () => sleep(500).then(() => ({ text: answer, paceMs: 100 }))
    const started = await request(gateways[0]!.url, "/api/agent-runs", { key, body: { prompt: "How many orders?" } })
    expect(started.status, started.text).toBe(202)
    const followers = gateways.map((g) => followSse(g.url, `/api/agent-runs/${started.json.id}/events`, key))
    for (const follower of followers) expect(await follower.ended).toEqual({ status: 200, broken: false })
    const events = (await request(gateways[0]!.url, `/api/agent-runs/${started.json.id}/events`, { key })).json.items
    const runner = Number(String(events[0].data.runner).split(":").at(-1))
    // At least one of the two gateways is not the runner: its followers had the text through the store's notifications.
    expect(gateways.some((g) => g.process.pid !== runner)).toBe(true)
    for (const follower of followers) {
      const pieces = follower.events.filter((e) => e.event === "text_delta")
      expect(pieces.length).toBeGreaterThan(3)
      expect(pieces.reduce((text, e) => text.slice(0, e.data.offset) + e.data.text, "")).toBe(answer)
      expect(follower.events.filter((e) => e.event !== "text_delta").map((e) => e.event)).toEqual(["model_call", "completed"])
    }
  }, 30_000)

  it.skipIf(skip)("kill -9 of the runner in the middle of a run: another finishes it, and no tool call runs twice", async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    let heldOnce = false
    script = async (req) => {
      const results = req.toolResults.length
      if (results === 0) return { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "select count(*) as n from orders" } }] }
      if (results === 1) {
        // The second turn is held once, so its runner dies in the middle of it.
        if (!heldOnce) {
          heldOnce = true
          await held
        }
        return { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "select max(total) as top from orders" } }] }
      }
      return { text: "42 orders, the largest 42." }
    }
    const started = await request(gateways[0]!.url, "/api/agent-runs", { key, body: { prompt: "How many orders?" } })
    expect(started.status, started.text).toBe(202)
    const id = started.json.id
    // A client follows the run's events through the first gateway, which may be the runner that dies.
    const followed = followSse(gateways[0]!.url, `/api/agent-runs/${id}/events`, key)
    // Wait for the second model call to be in flight, then find its runner from the first turn's events.
    const deadline = Date.now() + 20_000
    while (!heldOnce && Date.now() < deadline) await sleep(50)
    expect(heldOnce).toBe(true)
    const sofar = (await request(living().url, `/api/agent-runs/${id}/events`, { key })).json.items
    const runner = sofar.find((e: any) => e.type === "model_call").data.runner as string
    const pid = Number(runner.split(":").at(-1))
    const victim = [...gateways.map((g) => g.process), worker.process].find((p) => p.pid === pid)!
    expect(victim, runner).toBeDefined()
    victim.kill("SIGKILL")
    await new Promise((resolve) => victim.once("exit", resolve))
    const killedAt = Date.now()
    release()

    // Another runner takes the run over within seconds: its first step is recorded by then.
    let takenOverAt = 0
    while (takenOverAt === 0 && Date.now() - killedAt < 30_000) {
      const now = (await request(living().url, `/api/agent-runs/${id}/events`, { key })).json.items
      if (now.some((e: any) => e.data.runner !== undefined && e.data.runner !== runner)) takenOverAt = Date.now()
      else await sleep(50)
    }
    expect(takenOverAt - killedAt, `taken over after ${takenOverAt - killedAt} ms`).toBeLessThanOrEqual(TAKEOVER_MS)
    const done = await ended(id, 20_000)
    expect(done).toMatchObject({ status: "completed", answer: "42 orders, the largest 42.", turns: 3 })
    const events = (await request(living().url, `/api/agent-runs/${id}/events`, { key })).json.items
    expect(events.map((e: any) => e.type)).toEqual(["model_call", "tool_call", "model_call", "tool_call", "model_call", "completed"])
    // The stream the client followed carried on (through another gateway, with Last-Event-ID, when its own died).
    const first = await followed.ended
    const rest = first.broken ? followSse(living().url, `/api/agent-runs/${id}/events`, key, followed.events.at(-1)?.id ?? "0") : null
    if (rest !== null) expect(await rest.ended).toEqual({ status: 200, broken: false })
    expect([...followed.events, ...(rest?.events ?? [])].filter((e) => e.id !== null).map((e) => Number(e.id))).toEqual([1, 2, 3, 4, 5, 6])
    const runners = new Set(events.filter((e: any) => e.data.runner !== undefined).map((e: any) => e.data.runner))
    expect(runners.size).toBe(2)
    expect(events.slice(2).every((e: any) => e.data.runner !== runner)).toBe(true)

    // Each tool call ran once: one audit row per tool call and one per governed query.
    const audit = (await request(living().url, "/api/audit?limit=100", { key: await localKey(living()) })).json.items.filter(
      (row: any) => row.details?.run_id === id || row.details?.parent?.run_id === id
    )
    // Each query is estimated (the tool with its statement planned, step estimate/…) before it runs: one row per step, none twice.
    const toolRows = audit.filter((row: any) => row.event_type === "agent_tool_call")
    expect(toolRows.map((row: any) => `${row.details.tool} ${row.details.step}`).sort()).toEqual([
      "query_database 0/0",
      "query_database 1/0",
      "query_database estimate/0/0",
      "query_database estimate/1/0"
    ])
    expect(audit.filter((row: any) => row.event_type === "query")).toHaveLength(4)
  }, 60_000)

  it.skipIf(skip)("SIGTERM to a worker and to a gateway in the middle of model calls: each exits 0 within SP_SHUTDOWN_TIMEOUT_SECONDS, and their runs finish elsewhere", async () => {
    // Runners of its own, so the kill -9 above cannot have taken the kinds this needs.
    const spare = await startGateway({ databaseUrl: store.url, env })
    gateways.push(spare)
    const freshWorker = await startWorker({ ...env, DATABASE_URL: store.url })
    onTestFinished(() => void freshWorker.process.kill("SIGKILL"))
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const askedOnce = new Set<string>()
    script = async (req) => {
      if (req.toolResults.length === 0) return { toolCalls: [{ name: "list_connections", args: {} }] }
      // Each run's second model call outlives the shutdown deadline once; the run's next runner asks again.
      const prompt = String(req.body.messages[1].content)
      if (!askedOnce.has(prompt)) {
        askedOnce.add(prompt)
        await Promise.race([held, sleep(30_000)])
      }
      return { text: `done ${prompt}` }
    }
    const runnerOf = new Map<string, number>()
    const ids: Array<string> = []
    const holds = (pid: number | undefined) => [...runnerOf.values()].includes(pid!)
    // Runs go to runners by their ids' shards: start them until the fresh worker and an earlier gateway each hold one.
    const earlier = gateways.filter((g) => g !== spare && alive(g.process))
    while (ids.length < 40 && !(holds(freshWorker.process.pid) && earlier.some((g) => holds(g.process.pid)))) {
      const started = await request(spare.url, "/api/agent-runs", { key, body: { prompt: `held ${ids.length}` } })
      expect(started.status, started.text).toBe(202)
      ids.push(started.json.id)
      for (const deadline = Date.now() + 20_000; askedOnce.size < ids.length && Date.now() < deadline; ) await sleep(20)
      const events = (await request(spare.url, `/api/agent-runs/${started.json.id}/events`, { key })).json.items
      runnerOf.set(started.json.id, Number(String(events.find((e: any) => e.type === "model_call").data.runner).split(":").at(-1)))
    }
    const victims = [freshWorker.process, earlier.find((g) => holds(g.process.pid))?.process].filter((p): p is ChildProcess => p !== undefined)
    expect(victims.map((p) => holds(p.pid))).toEqual([true, true])
    for (const victim of victims) {
      const stopping = Date.now()
      victim.kill("SIGTERM")
      const exit = await new Promise<number | null>((resolve) => (victim.exitCode !== null ? resolve(victim.exitCode) : victim.once("exit", (code) => resolve(code))))
      const tookMs = Date.now() - stopping
      expect([exit, tookMs <= 8_000 + 1_000], `${victim === freshWorker.process ? "worker" : "gateway"}: exit ${exit} after ${tookMs} ms`).toEqual([0, true])
    }
    release()
    const done = await Promise.all(ids.map((id) => ended(id, 30_000)))
    expect(done.map((d) => d.status)).toEqual(ids.map(() => "completed"))
    expect(done.map((d) => d.answer)).toEqual(ids.map((_, i) => `done held ${i}`))
  }, 120_000)

  it.skipIf(skip)("100 concurrent runs across the runners that are left all complete, each exactly once", async () => {
    script = (req) =>
      req.toolResults.length === 0
        ? { toolCalls: [{ name: "list_connections", args: {} }] }
        : { text: `done ${String(req.body.messages[1].content).slice(0, 20)}` }
    const entry = living()
    const started = await Promise.all(Array.from({ length: 100 }, (_, i) => request(entry.url, "/api/agent-runs", { key, body: { prompt: `run ${i}` } })))
    expect(started.map((s) => s.status)).toEqual(Array(100).fill(202))
    const done = await Promise.all(started.map((s) => ended(s.json.id, 60_000)))
    // A run that failed says why in its runner's log: the message carries those lines.
    const stepFailures = [...gateways.map((g) => g.logs()), worker.logs()].join("\n").split("\n").filter((line) => line.includes("step failed")).slice(0, 20)
    expect(done.filter((d) => d.status !== "completed").map((d) => [d.status, d.error]), stepFailures.join("\n")).toEqual([])
    for (const [i, d] of done.entries()) expect(d.answer).toBe(`done run ${i}`)
    const ids = started.map((s) => s.json.id)
    const counts = await store.query<{ run_id: string; completed: number; tools: number }>(
      `select job_id as run_id, count(*) filter (where type = 'completed')::int as completed, count(*) filter (where type = 'tool_call')::int as tools
         from job_events where kind = 'agent_run' and job_id = any($1) group by job_id`,
      [ids]
    )
    expect(counts).toHaveLength(100)
    expect(counts.every((c) => c.completed === 1 && c.tools === 1)).toBe(true)
    const auditRows = await store.query<{ n: number }>(
      "select count(*)::int as n from gateway_audit_logs where event_type = 'agent_tool_call' and details->>'run_id' = any($1)",
      [ids]
    )
    expect(auditRows[0]!.n).toBe(100)
  }, 120_000)

  it.skipIf(skip)("a run left queued without its job (its start failed half-way) ends when cancelled", async () => {
    const owner = (await store.query<{ org_id: string; user_id: string; principal_kind: string; key_id: string }>("select org_id, user_id, principal_kind, key_id from agent_runs limit 1"))[0]!
    await store.query(
      `insert into agent_runs (id, org_id, user_id, principal_kind, key_id, prompt, status, max_turns) values ('run_orphan', $1, $2, $3, $4, 'orphaned', 'queued', 5)`,
      [owner.org_id, owner.user_id, owner.principal_kind, owner.key_id]
    )
    const cancel = await request(living().url, "/api/agent-runs/run_orphan", { key, method: "PATCH", body: { action: "cancel" } })
    expect(cancel.status, cancel.text).toBe(200)
    expect(await ended("run_orphan", 20_000)).toMatchObject({ status: "cancelled" })
  })
})
