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

/** A gateway whose store is reached through a relay the test can cut, its agent asking a scripted model fake. */
const outageKit = (env: Record<string, string>) => {
  const kit = {} as { store: TestDatabase; relay: Relay; gateway: Gateway; key: string; script: (request: ModelRequest) => ModelReply | Promise<ModelReply> }
  let fake: Awaited<ReturnType<typeof startModelFake>>
  kit.script = () => ({ text: "done" })
  beforeAll(async () => {
    if (skip) return
    kit.store = await createTestDatabase()
    kit.relay = new Relay(await freePort())
    await kit.relay.open()
    const url = new URL(kit.store.url)
    url.port = String(kit.relay.port)
    fake = await startModelFake((req) => kit.script(req))
    ;({ gateway: kit.gateway, key: kit.key } = await kitGateway(url.toString(), fake, env))
  }, 60_000)
  afterAll(async () => {
    await kit.relay?.open()
    await kit.gateway?.stop()
    kit.relay?.cut()
    await fake?.close()
    await kit.store?.drop()
  })
  return kit
}

/** A run's state once it has ended or waits for someone, within `ms`. */
const settled = async (kit: ReturnType<typeof outageKit>, id: string, ms = 30_000) => {
  let current = (await request(kit.gateway.url, `/api/agent-runs/${id}`, { key: kit.key })).json
  for (const deadline = Date.now() + ms; !["completed", "failed", "cancelled", "waiting_for_query_approval"].includes(current.status) && Date.now() < deadline; await sleep(200)) {
    current = (await request(kit.gateway.url, `/api/agent-runs/${id}`, { key: kit.key })).json
  }
  return current
}

/** A database for the agent's tools, registered as `name` on the kit's gateway. */
const shopOf = async (kit: ReturnType<typeof outageKit>, name: string) => {
  const shop = await createTestDatabase()
  const admin = await localKey(kit.gateway)
  const connection = { name, db_type: "postgresql", host: "127.0.0.1", port: 5432, database: shop.name, username: "root" }
  expect((await request(kit.gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
  /** How many statements containing `text` run on the shop now: run, not planned (a tool call's estimate explains it first). */
  const running = async (text: string) =>
    (
      await shop.query("select count(*)::int as n from pg_stat_activity where datname = $1 and query like $2 and query not ilike '%explain%' and pid <> pg_backend_pid()", [
        shop.name,
        `%${text}%`
      ])
    )[0]!.n
  return Object.assign(shop, { running })
}

describe("the job kit: a store that goes away mid-step", () => {
  // The slow query needs no approval: what is tested is the outage, not the estimate.
  const kit = outageKit({ SP_AGENT_QUERY_APPROVAL_USD: "100", SP_AGENT_CONVERSATION_BUDGET_USD: "100" })

  it.skipIf(skip)("a step whose store is cut off as it ends is done again once the store is back: the run completes, its model call made once", async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    let calls = 0
    kit.script = async () => {
      calls++
      await held
      return { text: "answered across the outage" }
    }
    const started = await request(kit.gateway.url, "/api/agent-runs", { key: kit.key, body: { prompt: "across an outage" } })
    expect(started.status).toBe(202)
    for (const deadline = Date.now() + 10_000; calls === 0 && Date.now() < deadline; ) await sleep(50)
    expect(calls).toBe(1)
    // The model answers while every store session is reset and no new one can open: the step's writes fail.
    await kit.relay.cut()
    release()
    await sleep(2_500)
    await kit.relay.open()
    const current = await settled(kit, started.json.id)
    expect(current, JSON.stringify(current.error)).toMatchObject({ status: "completed", answer: "answered across the outage" })
    expect(calls).toBe(1)
  }, 60_000)

  const SLOW = "select extract(epoch from statement_timestamp()) * 1000 as started_ms, count(*) as n from generate_series(1, 6000000)"
  const toolCallsAudited = async (runId: string) =>
    (await kit.store.query("select count(*)::int as n from gateway_audit_logs where event_type = 'agent_tool_call' and details->>'run_id' = $1 and details->>'planned_only' is null", [runId]))[0]!.n

  it.skipIf(skip)("a tool call whose store is cut off while its query runs is not run again: the run completes with the first result, audited once", async () => {
    const shop = await shopOf(kit, "shop")
    try {
      const sent: Array<ModelRequest> = []
      kit.script = (req) => {
        sent.push(req)
        if (req.toolResults.length > 0) return { text: "answered" }
        return { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: SLOW } }] }
      }
      const started = await request(kit.gateway.url, "/api/agent-runs", { key: kit.key, body: { prompt: "a slow query across an outage" } })
      expect(started.status).toBe(202)
      for (const deadline = Date.now() + 10_000; (await shop.running("generate_series(1, 6000000)")) === 0 && Date.now() < deadline; ) await sleep(20)
      expect(await shop.running("generate_series(1, 6000000)")).toBe(1)
      const cutAt = Date.now()
      await kit.relay.cut()
      await sleep(2_500)
      await kit.relay.open()
      const current = await settled(kit, started.json.id)
      expect(current, JSON.stringify(current.error)).toMatchObject({ status: "completed", answer: "answered" })
      // The result the model read is the query that ran before the cut, not a second run of it.
      const result = sent.at(-1)!.toolResults.map((r) => r.text).join(" ")
      const startedMs = Number(/(\d{13}(\.\d+)?)/.exec(result)?.[1])
      expect(startedMs, result).toBeLessThan(cutAt)
      expect(await toolCallsAudited(started.json.id)).toBe(1)
    } finally {
      await shop.drop()
    }
  }, 60_000)

  it.skipIf(skip)("a tool that ran before an outage is audited even when its run was cancelled while the store was away", async () => {
    const shop = await shopOf(kit, "shop_cancelled")
    try {
      kit.script = (req) => (req.toolResults.length > 0 ? { text: "answered" } : { toolCalls: [{ name: "query_database", args: { connection_name: "shop_cancelled", sql: SLOW } }] })
      const started = await request(kit.gateway.url, "/api/agent-runs", { key: kit.key, body: { prompt: "a slow query, cancelled across an outage" } })
      expect(started.status).toBe(202)
      for (const deadline = Date.now() + 10_000; (await shop.running("generate_series(1, 6000000)")) === 0 && Date.now() < deadline; ) await sleep(20)
      await kit.relay.cut()
      // The user cancels while this gateway cannot reach the store (another replica took the request).
      await kit.store.query("update agent_runs set cancel_requested = true where id = $1", [started.json.id])
      await sleep(2_500)
      await kit.relay.open()
      const current = await settled(kit, started.json.id)
      const events = (await request(kit.gateway.url, `/api/agent-runs/${started.json.id}/events`, { key: kit.key })).json.items
      // The statement ran: its audit rows are written though the run ended before the step was done.
      expect([current.status, await toolCallsAudited(started.json.id)], JSON.stringify(events)).toEqual(["cancelled", 1])
    } finally {
      await shop.drop()
    }
  }, 60_000)
})

describe("the job kit: a query stopped at its cost cap across an outage", () => {
  // A query may cost $0.10 without approval: stopped at that, about 1.6 s into reading, it asks for approval.
  const kit = outageKit({ SP_AGENT_QUERY_APPROVAL_USD: "0.1", SP_AGENT_CONVERSATION_BUDGET_USD: "100" })

  it.skipIf(skip)("a tool call stopped at the cap while the store is away still asks for approval once the store is back", async () => {
    const shop = await shopOf(kit, "shop")
    try {
      // The planner prices a recursive CTE at a few rows; it reads millions.
      const recursive = "with recursive r (n) as (select 1 union all select n + 1 from r where n < 300000000) select count(*) from r"
      kit.script = (req) => (req.toolResults.length > 0 ? { text: "answered" } : { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: recursive } }] })
      const started = await request(kit.gateway.url, "/api/agent-runs", { key: kit.key, body: { prompt: "count a lot across an outage" } })
      expect(started.status).toBe(202)
      for (const deadline = Date.now() + 10_000; (await shop.running("n < 300000000")) === 0 && Date.now() < deadline; ) await sleep(20)
      expect(await shop.running("n < 300000000")).toBe(1)
      await kit.relay.cut()
      for (const deadline = Date.now() + 10_000; (await shop.running("n < 300000000")) > 0 && Date.now() < deadline; ) await sleep(50)
      await sleep(1_000)
      await kit.relay.open()
      const current = await settled(kit, started.json.id)
      expect(current, JSON.stringify(current)).toMatchObject({ status: "waiting_for_query_approval", pending: { reason: expect.stringMatching(/ran past what its estimate allowed and was stopped/) } })
      const events = (await request(kit.gateway.url, `/api/agent-runs/${started.json.id}/events`, { key: kit.key })).json.items
      expect(events.find((e: any) => e.type === "tool_call").data).toMatchObject({ is_error: true, stopped_at_cost_cap: true })
    } finally {
      await shop.drop()
    }
  }, 60_000)
})
