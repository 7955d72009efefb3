import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ModelReply, type ModelRequest, startModelFake } from "../fakes/ModelFake"
import { freePort, type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { followSse, type SseEvent } from "../support/Sse"
import { eventually } from "../support/Eventually"
import { Relay } from "../support/Relay"
import { createTestDatabase, postgresAvailable, redisAvailable, TEST_REDIS_URL, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const MODEL_KEY = "sk-ant-test-0a1b2c3d4e5f-never-in-a-prompt"
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

type Script = (request: ModelRequest, index: number) => ModelReply | Promise<ModelReply>

/** Each turn's text as a follower puts it together from the text_delta events: a piece at offset 0 starts it again. */
const textsOf = (events: ReadonlyArray<SseEvent>) => {
  const texts = new Map<number, string>()
  for (const { event, data } of events) if (event === "text_delta") texts.set(data.turn, (texts.get(data.turn) ?? "").slice(0, data.offset) + data.text)
  return texts
}

describe("agent runs: the built-in agent as a durable job, through the governed path (issue 19)", () => {
  let gateway: Gateway
  let admin: string
  let runner: string
  let database: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  // Each test sets the script the fake model follows.
  let script: Script = () => ({ text: "unscripted" })

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query(`create table customers (id int primary key, name text, email text);
      insert into customers values (1, 'Ada', 'ada@example.com'), (2, 'Grace', 'grace@example.com');
      create table orders (id int primary key, customer_id int references customers, total numeric);
      insert into orders select g, 1 + g % 2, g * 10 from generate_series(1, 42) g;`)
    fake = await startModelFake((req, i) => script(req, i))
    gateway = await startApp({
      env: { SP_LLM_PROVIDER: "anthropic", SP_LLM_BASE_URL: fake.url, SP_LLM_API_KEY: MODEL_KEY, SP_LLM_MODEL: "claude-sonnet-4-5" }
    })
    admin = await localKey(gateway)
    runner = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "runner", scopes: ["read", "query", "agent:run"] } })).json.key
    const connection = { name: "shop", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    const pii = await request(gateway.url, "/api/connections/shop/pii", { key: admin, method: "PUT", body: { rules: [{ table: "customers", column: "email", action: "mask" }] } })
    expect(pii.status, pii.text).toBe(200)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await fake?.close()
    await database?.drop()
  })

  const start = (body: object, key = runner) => request(gateway.url, "/api/agent-runs", { key, body })
  const run = (id: string, key = runner) => request(gateway.url, `/api/agent-runs/${id}`, { key }).then((r) => r.json)
  const events = (id: string, key = runner) => request(gateway.url, `/api/agent-runs/${id}/events`, { key }).then((r) => r.json.items as Array<any>)
  const until = async (id: string, done: (run: any) => boolean, ms = 20_000) => {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      const current = await run(id)
      if (done(current)) return current
      await sleep(100)
    }
    throw new Error(`run ${id} is still ${JSON.stringify(await run(id))}`)
  }
  const ended = (id: string) => until(id, (r) => ["completed", "failed", "cancelled"].includes(r.status))
  /** The model's first answer waits until the returned function is called; a second turn would be a test failure. */
  const holdFirstTurn = () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    script = async (req) => {
      if (req.toolResults.length > 0) return { text: "should not get here" }
      await held
      return { toolCalls: [{ name: "list_connections", args: {} }] }
    }
    return release
  }

  it.skipIf(skip)("a stream whose connection drops mid-answer is a network failure: retried from its start, and the run completes", async () => {
    const answer = "Ada and Grace placed 21 orders each, 42 in all."
    let calls = 0
    script = () => (calls++ === 0 ? { text: answer, paceMs: 20, cutOff: true } : { text: answer })
    const started = await start({ prompt: "Orders per customer, once more?" })
    const run = await ended(started.json.id)
    expect(run, JSON.stringify(run.error)).toMatchObject({ status: "completed", answer, turns: 1 })
    expect(calls).toBe(2)
  })

  it.skipIf(skip)("the answer streams in as the model writes it, to followers who may see it; a stream that breaks off is retried from its start", async () => {
    const answer = "Ada and Grace placed 21 orders each, 42 in all."
    let calls = 0
    // The answer starts once the followers are surely listening: a piece sent before would not reach them.
    script = () => sleep(calls++ === 0 ? 500 : 0).then(() => (calls === 1 ? { text: answer, paceMs: 120, breakOff: true } : { text: answer, paceMs: 120 }))
    const started = await start({ prompt: "Orders per customer?" })
    const reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "stream reader", scopes: ["read"] } })).json.key
    const arrivals: Array<{ readonly event: string; readonly at: number }> = []
    const followed = followSse(gateway.url, `/api/agent-runs/${started.json.id}/events`, runner)
    const readerFollowed = followSse(gateway.url, `/api/agent-runs/${started.json.id}/events`, reader)
    const seen = setInterval(() => {
      for (const event of followed.events.slice(arrivals.length)) arrivals.push({ event: event.event, at: Date.now() })
    }, 10)
    expect(await followed.ended).toEqual({ status: 200, broken: false })
    clearInterval(seen)
    for (const event of followed.events.slice(arrivals.length)) arrivals.push({ event: event.event, at: Date.now() })
    expect(await ended(started.json.id)).toMatchObject({ status: "completed", answer, turns: 1 })

    const deltas = followed.events.filter((e) => e.event === "text_delta")
    // Word by word, not all at the end: the first piece came well before the run's end.
    expect(deltas.length).toBeGreaterThan(5)
    const firstPiece = arrivals.find((a) => a.event === "text_delta")!.at
    expect(arrivals.find((a) => a.event === "completed")!.at - firstPiece).toBeGreaterThan(500)
    // The broken-off attempt's text was started again from offset 0; the pieces add up to the answer.
    expect(deltas.filter((e) => e.data.offset === 0)).toHaveLength(2)
    expect(deltas.every((e) => e.id === null && e.data.turn === 0)).toBe(true)
    expect(textsOf(followed.events)).toEqual(new Map([[0, answer]]))
    expect(followed.events.filter((e) => e.event !== "text_delta").map((e) => e.event)).toEqual(["model_call", "completed"])

    // A key without the query scope follows the run's steps, never the model's words.
    await readerFollowed.ended
    expect(readerFollowed.events.map((e) => e.event)).toEqual(["model_call", "completed"])
    expect(JSON.stringify(readerFollowed.events)).not.toContain("Grace")
  }, 30_000)

  it.skipIf(skip)("answers a question with schema_search and query_database: audited under the run, PII masked in what the model saw", async () => {
    script = (req) => {
      const results = req.toolResults
      if (results.length === 0) return { text: "Looking for the tables.", toolCalls: [{ name: "schema_search", args: { connection_name: "shop", query: "customers" } }] }
      if (results.length === 1) {
        return { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "select c.name, c.email, count(*) as orders from customers c join orders o on o.customer_id = c.id group by 1, 2 order by 1" } }] }
      }
      return { text: "Ada has 21 orders and Grace has 21.", usage: { input: 1000, output: 50 } }
    }
    const started = await start({ prompt: "How many orders does each customer have?", connection_name: "shop" })
    expect(started.status, started.text).toBe(202)
    const followed = followSse(gateway.url, `/api/agent-runs/${started.json.id}/events`, runner)
    expect(started.json).toMatchObject({ status: "queued", prompt: "How many orders does each customer have?", connection_name: "shop", max_turns: 50 })
    const done = await ended(started.json.id)
    expect(done).toMatchObject({ status: "completed", answer: "Ada has 21 orders and Grace has 21.", turns: 3, model: "claude-sonnet-4-5", error: null })
    expect(done.input_tokens).toBe(1200)
    expect(done.output_tokens).toBe(90)
    // claude-sonnet-4-5 at 3 and 15 USD per million tokens
    expect(done.cost_usd).toBeCloseTo((1200 * 3 + 90 * 15) / 1e6, 9)

    // What the model received: the governed result inside the envelope, the email masked, no secret anywhere.
    const last = fake.received.at(-1)!
    expect(last.headers["x-api-key"]).toBe(MODEL_KEY)
    const rows = last.toolResults[1]!.text
    expect(rows).toContain("<untrusted-data>")
    expect(rows).toContain("Ada")
    expect(rows).not.toContain("ada@example.com")
    for (const req of fake.received) {
      expect(req.raw).not.toContain(MODEL_KEY)
      expect(req.raw).not.toContain(runner)
      expect(req.raw).not.toContain("ada@example.com")
      expect(req.tools).toContain("query_database")
      expect(req.tools).not.toContain("create_api_key")
    }

    const steps = await events(started.json.id)
    expect(steps.map((e) => e.type)).toEqual(["model_call", "tool_call", "model_call", "tool_call", "model_call", "completed"])
    expect(steps.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6])
    expect(steps[3].data).toMatchObject({ tool: "query_database", connection: "shop", rows: 2, is_error: false, pii_masked: [{ column: "email", rule: "mask" }] })

    // The query's cost was estimated before it ran (PostgreSQL: free to run below the approval threshold).
    expect(steps[3].data.estimated_usd).toBeGreaterThan(0)
    expect(steps[3].data.estimated_usd).toBeLessThan(0.01)

    // A key that may read but not query sees what each step did, not what the model wrote or a tool returned (they can quote rows).
    const reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "run reader", scopes: ["read"] } })).json.key
    const seenByReader = await events(started.json.id, reader)
    expect(seenByReader[3].data).toMatchObject({ tool: "query_database", rows: 2, result_withheld: expect.any(String) })
    expect(seenByReader.filter((e) => e.type === "tool_call").every((e) => e.data.result === undefined)).toBe(true)
    expect(seenByReader.filter((e) => e.type === "model_call").every((e) => e.data.text === undefined && typeof e.data.text_withheld === "string")).toBe(true)
    expect(seenByReader.at(-1)).toMatchObject({ type: "completed", data: { answer_withheld: expect.any(String) } })
    expect(JSON.stringify(seenByReader)).not.toContain("Grace")
    expect(await run(started.json.id, reader)).toMatchObject({ status: "completed", answer: null, withheld: ["answer"], prompt: "How many orders does each customer have?" })
    expect(steps[3].data.result).toContain("Grace")

    // The event stream a client followed from the start: every event once, in order, and it ended with the run.
    expect(await followed.ended).toEqual({ status: 200, broken: false })
    const recorded = followed.events.filter((e) => e.event !== "text_delta")
    expect(recorded.map((e) => [e.id, e.event])).toEqual(steps.map((e) => [String(e.seq), e.type]))
    expect(recorded.at(-1)!.data.data).toEqual({ answer: "Ada has 21 orders and Grace has 21." })
    // Pieces of the model's text came between them (not kept, so without an id; what streamed before the
    // follower connected is not resent: the streaming test holds the model until its followers are there).
    expect(followed.events.filter((e) => e.event === "text_delta").every((e) => e.id === null && typeof e.data.text === "string")).toBe(true)
    // Resumed after the fourth event with Last-Event-ID: the rest, and nothing twice.
    const resumed = followSse(gateway.url, `/api/agent-runs/${started.json.id}/events`, runner, "4")
    await resumed.ended
    expect(resumed.events.map((e) => e.id)).toEqual(["5", "6"])

    // Every tool call and its governed query are audit rows of the run, under the run's key.
    const audit = (await request(gateway.url, "/api/audit?limit=50", { key: admin })).json.items.filter(
      (row: any) => row.details?.run_id === started.json.id || row.details?.parent?.run_id === started.json.id
    )
    // schema_search; the query's estimate (query_database with its statement planned, not run) and its plan; query_database and its query.
    expect(audit.map((row: any) => row.event_type).sort()).toEqual(["agent_tool_call", "agent_tool_call", "agent_tool_call", "query", "query"])
    expect(audit.filter((row: any) => row.event_type === "agent_tool_call").map((row: any) => `${row.details.tool} ${row.details.step}`).sort()).toEqual([
      "query_database 1/0",
      "query_database estimate/1/0",
      "schema_search 0/0"
    ])
    expect(new Set(audit.map((row: any) => row.key_id)).size).toBe(1)
    const queried = audit.filter((row: any) => row.event_type === "query")
    expect(queried.map((row: any) => [row.details.parent.step, row.details.planned ?? false, row.rows]).sort()).toEqual([
      ["1/0", false, 2],
      ["estimate/1/0", true, null]
    ])
  }, 30_000)

  it.skipIf(skip)("calls the model with the organization's own key when it set one (BYOK), else the gateway's", async () => {
    script = () => ({ text: "ok" })
    const own = "sk-ant-organization-own-9876"
    expect((await request(gateway.url, "/api/org/secrets", { key: admin, method: "PUT", body: { secrets: { llm_api_key: own } } })).status).toBe(200)
    const withOwn = await start({ prompt: "Whose key?" })
    await ended(withOwn.json.id)
    expect(fake.received.at(-1)!.headers["x-api-key"]).toBe(own)
    expect(fake.received.at(-1)!.raw).not.toContain(own)
    expect((await request(gateway.url, "/api/org/secrets", { key: admin, method: "PUT", body: { secrets: { llm_api_key: null } } })).status).toBe(200)
    const withGateway = await start({ prompt: "Whose key now?" })
    await ended(withGateway.json.id)
    expect(fake.received.at(-1)!.headers["x-api-key"]).toBe(MODEL_KEY)
  }, 30_000)

  it.skipIf(skip)("over MCP, run_agent starts a run and returns its answer; an agent:run-only key sees that tool alone", async () => {
    script = (req) =>
      req.toolResults.length === 0 ? { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "select count(*) as n from orders" } }] } : { text: "There are 42 orders." }
    const mcp = (key: string, method: string, params: object) =>
      request(gateway.url, "/mcp", { key, headers: { accept: "application/json, text/event-stream" }, body: { jsonrpc: "2.0", id: 1, method, params } })
    const answered = await mcp(runner, "tools/call", { name: "run_agent", arguments: { prompt: "How many orders?", connection_name: "shop" } })
    expect(answered.json.result.isError, answered.text).toBeUndefined()
    expect(answered.json.result.content[0].text).toBe("There are 42 orders.")
    expect(answered.json.result.structuredContent).toMatchObject({ status: "completed", turns: 2, connection_name: "shop" })
    const onlyAgent = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "agent only", scopes: ["agent:run"] } })).json.key
    expect((await mcp(onlyAgent, "tools/list", {})).json.result.tools.map((t: any) => t.name)).toEqual(["run_agent"])
    const refused = await mcp(onlyAgent, "tools/call", { name: "query_database", arguments: { connection_name: "shop", sql: "select 1" } })
    expect(refused.json.result.content[0].text).toMatch(/^insufficient_scope: /)
  }, 30_000)

  it.skipIf(skip || !fs.existsSync("/usr/bin/bwrap"))("runs code in a sandbox only when its key has execute: the code's queries go through the gate, masked, and the model never sees a masked value", async () => {
    const idOf = (text: string) => /sbx_[0-9a-f]{32}/.exec(text)?.[0]
    script = (req) => {
      const results = req.toolResults
      if (results.length === 0) return { toolCalls: [{ name: "sandbox_create", args: { connection_name: "shop" } }] }
      if (results.length === 1) {
        const code = "import sluice\nr = sluice.query('select name, email from customers order by id')\nprint(r.rows)"
        return { toolCalls: [{ name: "sandbox_execute", args: { sandbox_id: idOf(results[0]!.text), code } }] }
      }
      if (results.length === 2) return { toolCalls: [{ name: "sandbox_delete", args: { sandbox_id: idOf(results[0]!.text) } }] }
      return { text: "Done." }
    }
    const coder = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "coder", scopes: ["read", "query", "agent:run", "execute"] } })).json.key
    const started = await start({ prompt: "List the customers with code", connection_name: "shop" }, coder)
    const done = await until(started.json.id, (r) => ["completed", "failed", "cancelled"].includes(r.status), 60_000)
    expect(done.status, JSON.stringify(done)).toBe("completed")
    const ranCode = fake.received.at(-2)!.toolResults[1]!
    expect(ranCode.isError).toBe(false)
    expect(ranCode.text).toContain("Ada")
    expect(ranCode.text).not.toContain("ada@example.com")
    for (const req of fake.received.slice(-4)) {
      expect(req.tools).toContain("sandbox_execute")
      expect(req.raw).not.toContain("ada@example.com")
    }
    const audit = (await request(gateway.url, "/api/audit?limit=50", { key: admin })).json.items
    // The code's query is a row of its own under the run's tool call, on the sandbox's connection.
    const query = audit.find((row: any) => row.event_type === "query" && row.sql === "select name, email from customers order by id")
    expect(query).toMatchObject({ connection: "shop", outcome: "success", rows: 2, details: { parent: { tool: "sandbox_execute", run_id: started.json.id }, pii_masked: [{ column: "email", rule: "mask" }] } })

    // Without execute, the run is offered no sandbox tool.
    script = () => ({ text: "No code." })
    const plain = await ended((await start({ prompt: "Hi" })).json.id)
    expect(plain.status).toBe("completed")
    expect(fake.received.at(-1)!.tools.filter((name) => name.startsWith("sandbox_"))).toEqual([])
  }, 90_000)

  it.skipIf(skip)("a write the model attempts is refused, the model sees the refusal, and nothing changes", async () => {
    script = (req) =>
      req.toolResults.length === 0
        ? { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "delete from orders" } }] }
        : { text: `Refused: ${req.toolResults[0]!.text.slice(0, 40)}` }
    const started = await start({ prompt: "Delete every order" })
    const done = await ended(started.json.id)
    expect(done.status).toBe("completed")
    const refusal = fake.received.at(-1)!.toolResults[0]!
    expect(refusal.text).toMatch(/^query_blocked: /)
    expect((await database.query<{ n: number }>("select count(*)::int as n from orders"))[0]!.n).toBe(42)
    const audit = (await request(gateway.url, "/api/audit?limit=20", { key: admin })).json.items.filter((row: any) => row.details?.run_id === started.json.id)
    // Refused at its estimate and again as the query itself.
    expect(audit.sort((a: any, b: any) => b.details.step.localeCompare(a.details.step))).toMatchObject([
      { event_type: "agent_tool_call", outcome: "refused", block_reason: "query_blocked", details: { tool: "query_database", step: "estimate/0/0", planned_only: true } },
      { event_type: "agent_tool_call", outcome: "refused", block_reason: "query_blocked", details: { tool: "query_database", step: "0/0" } }
    ])
  }, 30_000)

  it.skipIf(skip)("asks the user a question, waits, and goes on with the answer", async () => {
    script = (req) =>
      req.toolResults.length === 0
        ? { toolCalls: [{ name: "ask_user", args: { question: "Which year?" } }] }
        : { text: `You said ${req.toolResults[0]!.text}.` }
    const started = await start({ prompt: "Revenue?" })
    const waiting = await until(started.json.id, (r) => r.status === "waiting_for_user")
    expect(waiting.pending).toMatchObject({ kind: "question", question: "Which year?" })
    const notWaiting = await request(gateway.url, `/api/agent-runs/${started.json.id}`, { key: runner, method: "PATCH", body: { action: "answer", answer: "" } })
    expect(notWaiting.status).toBe(400)
    const answered = await request(gateway.url, `/api/agent-runs/${started.json.id}`, { key: runner, method: "PATCH", body: { action: "answer", answer: "2025" } })
    expect(answered.status, answered.text).toBe(200)
    const done = await ended(started.json.id)
    expect(done).toMatchObject({ status: "completed", answer: "You said 2025.", pending: null })
    const again = await request(gateway.url, `/api/agent-runs/${started.json.id}`, { key: runner, method: "PATCH", body: { action: "answer", answer: "2026" } })
    expect([again.status, again.json.code]).toEqual([409, "conflict"])
  }, 30_000)

  it.skipIf(skip)("cancel stops a run waiting for an answer at once, and a running one at its next step", async () => {
    script = () => ({ toolCalls: [{ name: "ask_user", args: { question: "Which table?" } }] })
    const waiting = await start({ prompt: "Anything" })
    await until(waiting.json.id, (r) => r.status === "waiting_for_user")
    expect((await request(gateway.url, `/api/agent-runs/${waiting.json.id}`, { key: runner, method: "PATCH", body: { action: "cancel" } })).status).toBe(200)
    expect(await ended(waiting.json.id)).toMatchObject({ status: "cancelled" })

    const release = holdFirstTurn()
    const busy = await start({ prompt: "Anything" })
    await until(busy.json.id, (r) => r.status === "running")
    expect((await request(gateway.url, `/api/agent-runs/${busy.json.id}`, { key: runner, method: "PATCH", body: { action: "cancel" } })).status).toBe(200)
    release()
    expect(await ended(busy.json.id)).toMatchObject({ status: "cancelled" })
    expect((await events(busy.json.id)).filter((e) => e.type === "tool_call")).toEqual([])
  }, 30_000)

  it.skipIf(skip)("stops at max_turns; a provider error is retried, then fails the run cleanly", async () => {
    script = () => ({ toolCalls: [{ name: "list_connections", args: {} }] })
    const looping = await start({ prompt: "Loop", max_turns: 2 })
    expect(await ended(looping.json.id)).toMatchObject({ status: "failed", turns: 2, error: { code: "max_turns" } })

    let failures = 0
    script = () => (failures++ < 2 ? { status: 429, headers: { "retry-after": "0" } } : { text: "after two 429s" })
    const retried = await start({ prompt: "Retry" })
    expect(await ended(retried.json.id)).toMatchObject({ status: "completed", answer: "after two 429s" })

    script = () => ({ status: 401, body: { type: "error", error: { type: "authentication_error", message: `invalid x-api-key ${MODEL_KEY}` } } })
    const refused = await start({ prompt: "Refused" })
    const failed = await ended(refused.json.id)
    expect(failed).toMatchObject({ status: "failed", error: { code: "model_error", message: "The model provider answered 401 (check the API key)" } })
    expect(JSON.stringify(failed)).not.toContain(MODEL_KEY)
  }, 60_000)

  it.skipIf(skip)("a deleted key stops its runs at the next step; write or agent:run starts runs; bad input changes nothing", async () => {
    const temporary = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "temporary", scopes: ["read", "query", "agent:run"] } })).json
    const release = holdFirstTurn()
    const started = await start({ prompt: "Anything" }, temporary.key)
    await until(started.json.id, (r) => r.status === "running")
    expect((await request(gateway.url, `/api/keys/${temporary.id}`, { key: admin, method: "DELETE" })).status).toBe(204)
    release()
    expect(await ended(started.json.id)).toMatchObject({ status: "failed", error: { code: "credential_revoked" } })

    const reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "reader", scopes: ["read", "query"] } })).json.key
    const refused = await start({ prompt: "Anything" }, reader)
    expect([refused.status, refused.json.code, refused.json.message]).toEqual([403, "insufficient_scope", "This endpoint needs the write or agent:run scope"])
    // The specification's table gives starting a run to write; agent:run is the scope made for it alone.
    const writer = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "writer", scopes: ["read", "write"] } })).json.key
    const written = await start({ prompt: "Anything" }, writer)
    expect(written.status).toBe(202)
    expect((await request(gateway.url, `/api/agent-runs/${written.json.id}`, { key: writer, method: "PATCH", body: { action: "cancel" } })).status).toBe(200)
    for (const body of [{}, { prompt: "" }, { prompt: "x", max_turns: 0 }, { prompt: "x", extra: 1 }]) {
      const bad = await start(body)
      expect([bad.status, bad.json.code], JSON.stringify(body)).toEqual([400, "invalid_request"])
    }
    expect((await start({ prompt: "x", connection_name: "nope" })).status).toBe(404)
    // Text the store cannot hold is refused up front, not taken and then failing the run.
    expect((await start({ prompt: "a\u0000b" })).status).toBe(400)
    // A decision on a query's cost is a person's: it needs the write scope, which a key made to drive the agent lacks.
    const driver = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "driver", scopes: ["agent:run"] } })).json.key
    const approve = await request(gateway.url, `/api/agent-runs/${started.json.id}`, { key: driver, method: "PATCH", body: { action: "approve" } })
    expect([approve.status, approve.json.code]).toEqual([403, "insufficient_scope"])
    for (const path of ["/api/agent-runs/%00", "/api/agent-runs/run%20x"]) {
      expect((await request(gateway.url, path, { key: runner })).status, path).toBe(400)
    }
    expect((await request(gateway.url, "/api/agent-runs?cursor=WyJ4IiwieSJd", { key: runner })).status).toBe(400)
    expect((await request(gateway.url, "/api/agent-runs/run_nope", { key: runner })).status).toBe(404)
  }, 30_000)
})

/** The gateway's own services down (here Redis, which holds the rate limits) is not something a tool found: the model never hears of it. */
describe.skipIf(!(await redisAvailable()))("agent runs while the rate-limit store is down (issue 27)", () => {
  let gateway: Gateway
  let runner: string
  let redis: Relay
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let script: Script = () => ({ text: "unscripted" })

  beforeAll(async () => {
    const target = new URL(TEST_REDIS_URL)
    redis = new Relay(await freePort(), { host: target.hostname, port: Number(target.port || 6379) })
    await redis.open()
    fake = await startModelFake((req, i) => script(req, i))
    gateway = await startApp({
      env: { SP_LLM_PROVIDER: "anthropic", SP_LLM_BASE_URL: fake.url, SP_LLM_API_KEY: MODEL_KEY, SP_LLM_MODEL: "claude-sonnet-4-5", REDIS_URL: `redis://127.0.0.1:${redis.port}` }
    })
    const admin = await localKey(gateway)
    runner = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "runner", scopes: ["read", "query", "agent:run"] } })).json.key
  })
  afterAll(async () => {
    await redis?.open().catch(() => undefined)
    await gateway?.stop()
    await fake?.close()
    redis?.cut()
  })

  /** Starts a run whose first model answer asks for a tool once Redis is cut; what the model was sent after that is in `sent`. */
  const startWithRedisCut = async () => {
    const sent: Array<ModelRequest> = []
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    script = async (req) => {
      sent.push(req)
      if (req.toolResults.length > 0) return { text: `answered from: ${req.toolResults.map((r) => r.text).join(" | ")}` }
      await held
      return { toolCalls: [{ name: "list_connections", args: {} }] }
    }
    // Redis may still be reconnecting after the last test put it back.
    const started = await eventually(() => request(gateway.url, "/api/agent-runs", { key: runner, body: { prompt: "Which connections are there?" } }), (r) => r.status === 202, "a run started", 10_000, 200)
    await eventually(async () => sent.length, (n) => n === 1, "the first model call", 10_000, 20)
    redis.cut()
    release()
    return { id: started.json.id as string, sent }
  }
  const ended = async (id: string) => {
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(100)) {
      const run = (await request(gateway.url, `/api/agent-runs/${id}`, { key: runner })).json
      if (["completed", "failed", "cancelled"].includes(run.status)) return run
    }
    throw new Error(`run ${id} did not end`)
  }

  it("a tool call that meets it is tried again, not answered with the outage; back within the retries, the run goes on with real results", async () => {
    const { id, sent } = await startWithRedisCut()
    await sleep(1_500)
    expect(sent).toHaveLength(1)
    await redis.open()
    const run = await ended(id)
    expect(run.status, JSON.stringify(run.error)).toBe("completed")
    expect(sent).toHaveLength(2)
    expect(sent[1]!.toolResults.map((r) => r.text).join(" ")).not.toMatch(/unavailable/)
  }, 40_000)

  it("still down when the retries are spent: the run fails as unavailable, and the model never wrote an answer without the data", async () => {
    const { id, sent } = await startWithRedisCut()
    await sleep(11_000)
    await redis.open()
    const run = await ended(id)
    expect(run).toMatchObject({ status: "failed", error: { code: "unavailable" } })
    expect(run.answer ?? null).toBeNull()
    expect(sent).toHaveLength(1)
  }, 60_000)
})
