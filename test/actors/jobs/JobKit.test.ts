import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ModelReply, type ModelRequest, startModelFake } from "../../fakes/ModelFake"
import { freePort, type Gateway, localKey } from "../../support/Gateway"
import { request } from "../../support/Http"
import { startApp } from "../../support/InProcess"
import { Relay } from "../../support/Relay"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../support/Servers"

const skip = !(await postgresAvailable())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A gateway on the store at `storeUrl` whose agent asks the model fake `fake`, and a key that may run agents. */
const kitGateway = async (storeUrl: string, fake: { readonly url: string }, env: Record<string, string> = {}) => {
  const gateway = await startApp({
    databaseUrl: storeUrl,
    env: { SP_LLM_PROVIDER: "openai-compatible", SP_LLM_BASE_URL: `${fake.url}/v1`, SP_LLM_MODEL: "local-model", SP_JOB_POLL_MS: "100", ...env }
  })
  const admin = await localKey(gateway)
  const key: string = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "runner", scopes: ["read", "query", "agent:run"] } })).json.key
  return { gateway, key }
}

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
    ;({ gateway, key } = await kitGateway(store.url, fake))
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

describe("the job kit: a store that goes away mid-step", () => {
  let store: TestDatabase
  let relay: Relay
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let gateway: Gateway
  let key: string
  let script: (request: ModelRequest) => ModelReply | Promise<ModelReply> = () => ({ text: "done" })

  beforeAll(async () => {
    if (skip) return
    store = await createTestDatabase()
    relay = new Relay(await freePort())
    await relay.open()
    const url = new URL(store.url)
    url.port = String(relay.port)
    fake = await startModelFake((req) => script(req))
    // The slow query needs no approval: what is tested is the outage, not the estimate.
    ;({ gateway, key } = await kitGateway(url.toString(), fake, { SP_AGENT_QUERY_APPROVAL_USD: "100", SP_AGENT_CONVERSATION_BUDGET_USD: "100" }))
  }, 60_000)
  afterAll(async () => {
    await relay?.open()
    await gateway?.stop()
    relay?.cut()
    await fake?.close()
    await store?.drop()
  })

  it.skipIf(skip)("a step whose store is cut off as it ends is done again once the store is back: the run completes, its model call made once", async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    let calls = 0
    script = async () => {
      calls++
      await held
      return { text: "answered across the outage" }
    }
    const started = await request(gateway.url, "/api/agent-runs", { key, body: { prompt: "across an outage" } })
    expect(started.status).toBe(202)
    for (const deadline = Date.now() + 10_000; calls === 0 && Date.now() < deadline; ) await sleep(50)
    expect(calls).toBe(1)
    // The model answers while every store session is reset and no new one can open: the step's writes fail.
    await relay.cut()
    release()
    await sleep(2_500)
    await relay.open()
    let current = (await request(gateway.url, `/api/agent-runs/${started.json.id}`, { key })).json
    for (const deadline = Date.now() + 20_000; !["completed", "failed", "cancelled"].includes(current.status) && Date.now() < deadline; await sleep(200)) {
      current = (await request(gateway.url, `/api/agent-runs/${started.json.id}`, { key })).json
    }
    expect(current, JSON.stringify(current.error)).toMatchObject({ status: "completed", answer: "answered across the outage" })
    expect(calls).toBe(1)
  }, 60_000)

  it.skipIf(skip)("a tool call whose store is cut off while its query runs is not run again: the run completes with the first result, audited once", async () => {
    const shop = await createTestDatabase()
    try {
      const admin = await localKey(gateway)
      const connection = { name: "shop", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: shop.name, username: "root" }
      expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
      const sent: Array<ModelRequest> = []
      script = (req) => {
        sent.push(req)
        if (req.toolResults.length > 0) return { text: "answered" }
        return { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "select extract(epoch from statement_timestamp()) * 1000 as started_ms, count(*) as n from generate_series(1, 6000000)" } }] }
      }
      const started = await request(gateway.url, "/api/agent-runs", { key, body: { prompt: "a slow query across an outage" } })
      expect(started.status).toBe(202)
      const running = async () => (await shop.query("select count(*)::int as n from pg_stat_activity where datname = $1 and query like '%generate_series(1, 6000000)%' and pid <> pg_backend_pid()", [shop.name]))[0]!.n
      for (const deadline = Date.now() + 10_000; (await running()) === 0 && Date.now() < deadline; ) await sleep(20)
      expect(await running()).toBe(1)
      const cutAt = Date.now()
      await relay.cut()
      await sleep(2_500)
      await relay.open()
      let current = (await request(gateway.url, `/api/agent-runs/${started.json.id}`, { key })).json
      for (const deadline = Date.now() + 30_000; !["completed", "failed", "cancelled"].includes(current.status) && Date.now() < deadline; await sleep(200)) {
        current = (await request(gateway.url, `/api/agent-runs/${started.json.id}`, { key })).json
      }
      expect(current, JSON.stringify(current.error)).toMatchObject({ status: "completed", answer: "answered" })
      // The result the model read is the query that ran before the cut, not a second run of it.
      const result = sent.at(-1)!.toolResults.map((r) => r.text).join(" ")
      const startedMs = Number(/(\d{13}(\.\d+)?)/.exec(result)?.[1])
      expect(startedMs, result).toBeLessThan(cutAt)
      const audited = await store.query("select count(*)::int as n from gateway_audit_logs where event_type = 'agent_tool_call' and details->>'run_id' = $1 and details->>'planned_only' is null", [started.json.id])
      expect(audited[0]!.n).toBe(1)
    } finally {
      await shop.drop()
    }
  }, 60_000)
})
