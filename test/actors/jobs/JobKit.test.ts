import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ModelReply, type ModelRequest, startModelFake } from "../../fakes/ModelFake"
import { type Gateway, localKey } from "../../support/Gateway"
import { request } from "../../support/Http"
import { startApp } from "../../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../support/Servers"

const skip = !(await postgresAvailable())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("the job kit: starts, and steps of ended jobs", () => {
  let store: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let gateway: Gateway
  let key: string
  let script: (request: ModelRequest) => ModelReply | Promise<ModelReply> = () => ({ text: "done" })

  beforeAll(async () => {
    if (skip) return
    store = await createTestDatabase()
    fake = await startModelFake((req) => script(req))
    gateway = await startApp({
      databaseUrl: store.url,
      env: { SP_LLM_PROVIDER: "openai-compatible", SP_LLM_BASE_URL: `${fake.url}/v1`, SP_LLM_MODEL: "local-model", SP_JOB_POLL_MS: "100" }
    })
    const admin = await localKey(gateway)
    key = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "runner", scopes: ["read", "query", "agent:run"] } })).json.key
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await fake?.close()
    await store?.drop()
  })

  const run = (id: string) => request(gateway.url, `/api/agent-runs/${id}`, { key }).then((r) => r.json)

  it.skipIf(skip)("a run whose row committed but whose process died before its job started (kill -9 mid-POST) is started within seconds", async () => {
    const started = await request(gateway.url, "/api/agent-runs", { key, body: { prompt: "first" } })
    expect(started.status).toBe(202)
    // What a kill between the row's commit and the job's start leaves: the row, queued, and no job.
    const orphan = `run_${"0".repeat(24)}${Date.now().toString(16).padStart(8, "0")}`
    await store.query(
      `insert into agent_runs (id, org_id, user_id, principal_kind, key_id, prompt, connection_name, conversation_id, status, max_turns)
       select $1, org_id, user_id, principal_kind, key_id, 'orphaned', null, null, 'queued', max_turns from agent_runs where id = $2`,
      [orphan, started.json.id]
    )
    const deadline = Date.now() + 10_000
    let current = await run(orphan)
    while (current.status !== "completed" && Date.now() < deadline) {
      await sleep(200)
      current = await run(orphan)
    }
    expect(current).toMatchObject({ status: "completed", answer: "done" })
  })

  it.skipIf(skip)("a run left unbegun for over an hour is not started any more: it fails as not started", async () => {
    const started = await request(gateway.url, "/api/agent-runs", { key, body: { prompt: "a template" } })
    const stale = `run_${"1".repeat(24)}${Date.now().toString(16).padStart(8, "0")}`
    await store.query(
      `insert into agent_runs (id, org_id, user_id, principal_kind, key_id, prompt, status, max_turns, created_at)
       select $1, org_id, user_id, principal_kind, key_id, 'long forgotten', 'queued', max_turns, now() - interval '2 hours' from agent_runs where id = $2`,
      [stale, started.json.id]
    )
    const deadline = Date.now() + 5_000
    let current = await run(stale)
    while (current.status === "queued" && Date.now() < deadline) {
      await sleep(200)
      current = await run(stale)
    }
    expect(current).toMatchObject({ status: "failed", error: { code: "not_started" }, turns: 0 })
    expect(fake.received.some((r) => JSON.stringify(r.body).includes("long forgotten"))).toBe(false)
  })

  it.skipIf(skip)("a step done again after its run ended elsewhere (failed on another runner) does nothing: no tool runs for an ended run", async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    let asked = false
    script = async (req) => {
      if (req.toolResults.length > 0) return { text: "should not get here" }
      asked = true
      await held
      return { toolCalls: [{ name: "list_connections", args: {} }] }
    }
    const started = await request(gateway.url, "/api/agent-runs", { key, body: { prompt: "ended elsewhere" } })
    expect(started.status).toBe(202)
    const id = started.json.id
    for (const deadline = Date.now() + 10_000; !asked && Date.now() < deadline; ) await sleep(50)
    expect(asked).toBe(true)
    // What another runner's stop leaves while this one's model call is in flight: the run ended.
    await store.query("update agent_runs set status = 'failed', error_code = 'model_error', error_message = 'ended elsewhere', finished_at = now() where id = $1", [id])
    release()
    await sleep(3_000)
    const events = (await request(gateway.url, `/api/agent-runs/${id}/events`, { key })).json.items as Array<{ type: string }>
    expect(events.map((e) => e.type)).not.toContain("tool_call")
    const audited = await store.query("select count(*)::int as n from gateway_audit_logs where event_type = 'agent_tool_call' and details->>'run_id' = $1", [id])
    expect(audited[0]!.n).toBe(0)
    expect(await run(id)).toMatchObject({ status: "failed", error: { code: "model_error" } })
  })
})
