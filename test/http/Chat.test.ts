import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ModelReply, type ModelRequest, startModelFake } from "../fakes/ModelFake"
import { eventually } from "../support/Eventually"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { followSse } from "../support/Sse"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

type Script = (request: ModelRequest, index: number) => ModelReply | Promise<ModelReply>

// PostgreSQL is priced at 3e-7 USD per row scanned: `big` (100,000 rows) is estimated at about 0.03 USD, `mid` (20,000) at 0.006.
const QUERY_APPROVAL_USD = 0.01
const CONVERSATION_BUDGET_USD = 0.035

describe("chat: conversations whose messages start governed agent runs, approvals, traces and trails (issue 19)", () => {
  let gateway: Gateway
  let admin: string
  let user: string
  let database: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let script: Script = () => ({ text: "unscripted" })

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query(`create table orders (id int primary key, total numeric);
      insert into orders select g, g * 10 from generate_series(1, 42) g;
      create table big (id int primary key, v int); insert into big select g, g % 7 from generate_series(1, 100000) g;
      create table mid (id int primary key, v int); insert into mid select g, g % 5 from generate_series(1, 20000) g;
      analyze orders; analyze big; analyze mid;`)
    fake = await startModelFake((req, i) => script(req, i))
    gateway = await startApp({
      env: {
        SP_LLM_PROVIDER: "anthropic",
        SP_LLM_BASE_URL: fake.url,
        SP_LLM_API_KEY: "sk-ant-chat-test",
        SP_LLM_MODEL: "claude-sonnet-4-5",
        SP_AGENT_QUERY_APPROVAL_USD: String(QUERY_APPROVAL_USD),
        SP_AGENT_CONVERSATION_BUDGET_USD: String(CONVERSATION_BUDGET_USD)
      }
    })
    admin = await localKey(gateway)
    user = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "chat user", scopes: ["read", "write", "query"] } })).json.key
    const connection = { name: "shop", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await fake?.close()
    await database?.drop()
  })

  const api = (path: string, options: { body?: unknown; method?: string; key?: string } = {}) =>
    request(gateway.url, path, { key: options.key ?? user, ...(options.body !== undefined ? { body: options.body } : {}), ...(options.method ? { method: options.method } : {}) })
  const converse = async (body: object = { connection_name: "shop" }) => {
    const created = await api("/api/chat/conversations", { body })
    expect(created.status, created.text).toBe(201)
    return created.json.id as string
  }
  const say = async (conversation: string, content: string) => {
    const posted = await api(`/api/chat/conversations/${conversation}/messages`, { body: { content } })
    expect(posted.status, posted.text).toBe(202)
    return posted.json.run.id as string
  }
  const runOf = (id: string) => api(`/api/agent-runs/${id}`).then((r) => r.json)
  const until = (id: string, status: string) => eventually(() => runOf(id), (run) => run.status === status, `run ${id} to be ${status}`)
  const ended = (id: string) => eventually(() => runOf(id), (run) => ["completed", "failed", "cancelled"].includes(run.status), `run ${id} to end`)
  const auditOf = async (runId: string) =>
    (await api("/api/audit?limit=100", { key: admin })).json.items.filter((row: any) => row.details?.run_id === runId || row.details?.parent?.run_id === runId)

  it.skipIf(skip)("messages start runs that carry the conversation so far; the answer is the agent's message; one run at a time", async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    script = async (req) => {
      if (req.toolResults.length === 0) {
        if (!req.raw.includes("And the largest?")) await held
        return { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: req.raw.includes("And the largest?") ? "select max(total) from orders" : "select count(*) from orders" } }] }
      }
      return { text: req.raw.includes("And the largest?") ? "The largest is 420." : "There are 42 orders." }
    }
    const conversation = await converse()
    expect((await api(`/api/chat/conversations/${conversation}`)).json).toMatchObject({ id: conversation, title: "New conversation", connection_name: "shop" })
    const first = await api(`/api/chat/conversations/${conversation}/messages`, { body: { content: "How many orders are there?\nAll of them." } })
    expect(first.status, first.text).toBe(202)
    expect(first.json.message).toMatchObject({ role: "user", content: "How many orders are there?\nAll of them.", run_id: first.json.run.id })
    expect(first.json.run).toMatchObject({ status: "queued", conversation_id: conversation, connection_name: "shop" })
    const followed = followSse(gateway.url, `/api/chat/conversations/${conversation}/runs/${first.json.run.id}/events`, user)

    // While the agent is on it, the conversation takes no other message, and changes nothing.
    const busy = await api(`/api/chat/conversations/${conversation}/messages`, { body: { content: "hurry" } })
    expect(busy.status).toBe(409)
    expect(busy.json.code).toBe("conflict")
    release()
    expect(await ended(first.json.run.id)).toMatchObject({ status: "completed", answer: "There are 42 orders." })
    expect(await followed.ended).toEqual({ status: 200, broken: false })
    expect(followed.events.filter((e) => e.id !== null).map((e) => e.event)).toEqual(["model_call", "tool_call", "model_call", "completed"])
    // The conversation's route streams the answer's text as the agent's own route does.
    expect(followed.events.filter((e) => e.event === "text_delta").map((e) => e.data.text).join("")).toBe("There are 42 orders.")

    // Named by its first message's first line; the messages are the prompt and the answer.
    expect((await api(`/api/chat/conversations/${conversation}`)).json.title).toBe("How many orders are there?")
    const messages = (await api(`/api/chat/conversations/${conversation}/messages`)).json.items
    expect(messages.map((m: any) => [m.role, m.content, m.status])).toEqual([
      ["user", "How many orders are there?\nAll of them.", null],
      ["assistant", "There are 42 orders.", "completed"]
    ])

    // The next message's run is given the conversation so far.
    const second = await say(conversation, "And the largest?")
    expect(await ended(second)).toMatchObject({ status: "completed", answer: "The largest is 420." })
    const context = fake.received.find((r) => r.raw.includes("And the largest?"))!.body.messages
    expect(context.slice(0, 3)).toMatchObject([
      { role: "user", content: [{ type: "text", text: "How many orders are there?\nAll of them." }] },
      { role: "assistant", content: [{ type: "text", text: "There are 42 orders." }] },
      { role: "user", content: [{ type: "text", text: "And the largest?" }] }
    ])
    expect((await api(`/api/chat/conversations/${conversation}/messages`)).json.items).toHaveLength(4)
    expect((await api("/api/chat/conversations")).json.items[0]).toMatchObject({ id: conversation })

    // A caller who may not read rows (read and write, no query) gets a run that is not given the earlier answers: they quote rows.
    script = () => ({ text: "Noted." })
    const writer = (await api("/api/keys", { key: admin, body: { name: "writer without query", scopes: ["read", "write"] } })).json.key
    const third = await api(`/api/chat/conversations/${conversation}/messages`, { key: writer, body: { content: "Repeat what you said before" } })
    expect(third.status, third.text).toBe(202)
    expect(await ended(third.json.run.id)).toMatchObject({ status: "completed" })
    const withheld = JSON.stringify(fake.received.find((r) => r.raw.includes("Repeat what you said before"))!.body.messages)
    expect(withheld).toContain("How many orders are there?")
    expect(withheld).not.toContain("42 orders")
    expect(withheld).not.toMatch(/\b420\b/)
  }, 60_000)

  it.skipIf(skip)("messages posted at once start one run: the others are refused with 409 by the store itself", async () => {
    script = () => ({ toolCalls: [{ name: "ask_user", args: { question: "Which one?" } }] })
    const conversation = await converse()
    const posted = await Promise.all(Array.from({ length: 6 }, (_, i) => api(`/api/chat/conversations/${conversation}/messages`, { body: { content: `at once ${i}` } })))
    expect(posted.map((p) => p.status).sort()).toEqual([202, 409, 409, 409, 409, 409])
    const started = posted.find((p) => p.status === 202)!.json.run.id
    expect((await api(`/api/chat/conversations/${conversation}/messages`)).json.items).toHaveLength(2)
    await until(started, "waiting_for_user")
    expect((await api(`/api/chat/conversations/${conversation}/runs/${started}/cancel`, { method: "POST" })).status).toBe(200)
    expect(await ended(started)).toMatchObject({ status: "cancelled" })
  }, 60_000)

  it.skipIf(skip)("a query estimated over the threshold waits for approval: approved it runs, declined it does not and the model is told; past the budget it asks again", async () => {
    // What the latest message asks (earlier ones are in the context too).
    const sqlOf = (req: ModelRequest) => (JSON.stringify(req.body.messages.at(-1)).includes("Count big") ? "select count(*) from big" : "select sum(v) from mid")
    script = (req) =>
      req.toolResults.length === 0
        ? { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: sqlOf(req) } }] }
        : { text: `Done: ${req.toolResults[0]!.isError ? "declined" : "ran"} ${req.toolResults[0]!.text}` }
    const conversation = await converse()
    const base = `/api/chat/conversations/${conversation}`

    // Over the per-query threshold: it waits, with the query and its estimate, and nothing has run.
    const big = await say(conversation, "Count big")
    const waiting = await until(big, "waiting_for_query_approval")
    expect(waiting.pending).toMatchObject({ kind: "query_approval", tool: "query_database", connection_name: "shop", sql: "select count(*) from big" })
    expect(waiting.pending.estimated_usd).toBeGreaterThan(QUERY_APPROVAL_USD)
    expect(waiting.pending.reason).toMatch(/over the \$0\.01 a query may cost without approval/)
    // Its estimate: the tool run with its statement planned, not run (a planned query, no rows).
    const estimated = await auditOf(big)
    expect(estimated.filter((row: any) => row.event_type === "query").map((row: any) => [row.details.planned, row.rows])).toEqual([[true, null]])
    expect(estimated.filter((row: any) => row.event_type === "agent_tool_call").map((row: any) => [row.details.tool, row.details.step, row.details.planned_only])).toEqual([
      ["query_database", "estimate/0/0", true]
    ])
    const asked = (await api(`/api/agent-runs/${big}/events`)).json.items.at(-1)
    expect(asked).toMatchObject({ type: "approval_requested", data: { sql: "select count(*) from big" } })
    // The assistant's message says what it waits for.
    expect((await api(`${base}/messages`)).json.items.at(-1)).toMatchObject({ role: "assistant", status: "waiting_for_query_approval", pending: { kind: "query_approval" } })

    // Refusals change nothing: a bad decision, an answer to a run that asked no question.
    expect((await api(`${base}/runs/${big}/approval`, { body: { decision: "maybe" } })).status).toBe(400)
    expect((await api(`${base}/runs/${big}/clarification`, { body: { answer: "yes" } })).status).toBe(409)
    expect((await runOf(big)).status).toBe("waiting_for_query_approval")

    // Two decisions at once: one is taken, the other told so.
    const decided = await Promise.all([0, 1].map(() => api(`${base}/runs/${big}/approval`, { body: { decision: "approve" } })))
    expect(decided.map((d) => d.status).sort()).toEqual([200, 409])
    expect(await ended(big)).toMatchObject({ status: "completed", answer: expect.stringMatching(/^Done: ran .*100000/s) })
    expect((await api(`/api/agent-runs/${big}/events`)).json.items.map((e: any) => e.type)).toEqual([
      "model_call",
      "approval_requested",
      "approval",
      "tool_call",
      "model_call",
      "completed"
    ])
    expect((await api(`${base}/runs/${big}/approval`, { body: { decision: "approve" } })).status).toBe(409)

    // Under the threshold, but past the conversation's budget with what ran before: it asks again. Declined, it never runs.
    const mid = await say(conversation, "Sum mid")
    const again = await until(mid, "waiting_for_query_approval")
    expect(again.pending.estimated_usd).toBeLessThan(QUERY_APPROVAL_USD)
    expect(again.pending.reason).toMatch(/past its \$0\.035 budget/)
    expect((await api(`${base}/runs/${mid}/approval`, { body: { decision: "decline" } })).status).toBe(200)
    const declined = await ended(mid)
    expect(declined).toMatchObject({ status: "completed", answer: expect.stringMatching(/^Done: declined The user declined to run this query/) })
    const ranOf = async (run: string) => (await auditOf(run)).filter((row: any) => !String(row.details?.step ?? row.details?.parent?.step).startsWith("estimate/"))
    expect((await ranOf(mid)).filter((row: any) => row.details?.tool === "query_database" || row.details?.parent?.tool === "query_database")).toEqual([])
    expect((await api(`/api/agent-runs/${mid}/events`)).json.items.find((e: any) => e.type === "approval")).toMatchObject({ data: { approved: false } })

    // What a tool costs is what it runs, found by running the tool with its statements planned: each CTE
    // debug_cte_query runs on its own, a join's every loop, and the scans the explore tools run for the model.
    for (const [tool, args, statement] of [
      ["debug_cte_query", { sql: "with b as (select count(*) from big) select 1 where false" }, /from big\)\nSELECT \* FROM b$/],
      ["query_database", { sql: "select count(*) from orders a, orders b, orders c" }, /^select count\(\*\) from orders a, orders b, orders c$/],
      ["explore_column", { table_name: "big", column: "v" }, /count\(distinct "v"\).*from "public"\."big"/s],
      ["explore_columns", { table_name: "big" }, /count\(distinct "id"\).*from "public"\."big"/s]
    ] as const) {
      script = (req) => (req.toolResults.length === 0 ? { toolCalls: [{ name: tool, args: { connection_name: "shop", ...args } }] } : { text: "ok" })
      const own = await converse()
      const costly = await say(own, `Run ${tool}`)
      const held = await until(costly, "waiting_for_query_approval")
      expect(held.pending).toMatchObject({ tool, connection_name: "shop" })
      expect(held.pending.sql).toMatch(statement)
      expect(held.pending.estimated_usd, tool).toBeGreaterThan(QUERY_APPROVAL_USD)
      expect((await api(`/api/chat/conversations/${own}/runs/${costly}/approval`, { body: { decision: "decline" } })).status).toBe(200)
      await ended(costly)
      // Declined, nothing of it ran: its statements were only planned.
      expect((await auditOf(costly)).filter((row: any) => row.event_type === "query").every((row: any) => row.details.planned === true)).toBe(true)
    }

    // A small query, or a sample (a few rows, however big the table), in a new conversation asks nothing.
    for (const [tool, args] of [
      ["query_database", { sql: "select count(*) from orders" }],
      ["sample_table", { table_name: "big" }]
    ] as const) {
      script = (req) => (req.toolResults.length === 0 ? { toolCalls: [{ name: tool, args: { connection_name: "shop", ...args } }] } : { text: "ok" })
      const small = await say(await converse(), `Run ${tool}`)
      expect(await ended(small)).toMatchObject({ status: "completed" })
      expect((await api(`/api/agent-runs/${small}/events`)).json.items.map((e: any) => e.type)).not.toContain("approval_requested")
    }
  }, 60_000)

  it.skipIf(skip)("a query whose estimate is too low is stopped at what the threshold allows while it runs, and runs again only once approved", async () => {
    // The planner prices a recursive CTE at a few rows; it reads millions.
    const recursive = "with recursive r (n) as (select 1 union all select n + 1 from r where n < 3000000) select count(*) from r"
    script = (req) =>
      req.toolResults.length === 0
        ? { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: recursive } }] }
        : { text: `Done: ${req.toolResults.at(-1)!.text}` }
    const conversation = await converse()
    const counting = await say(conversation, "Count a lot")
    const waiting = await until(counting, "waiting_for_query_approval")
    expect(waiting.pending).toMatchObject({ kind: "query_approval", tool: "query_database", connection_name: "shop", sql: recursive, estimated_usd: QUERY_APPROVAL_USD })
    expect(waiting.pending.reason).toMatch(/ran past what its estimate allowed and was stopped \(The statement was stopped after 0\.13 s: at postgresql's list price, reading longer costs over the \$0\.01 a query may cost without approval\)/)
    const stopped = (await api(`/api/agent-runs/${counting}/events`)).json.items.find((e: any) => e.type === "tool_call")
    expect(stopped.data).toMatchObject({ is_error: true, stopped_at_cost_cap: true })
    expect((await api(`/api/chat/conversations/${conversation}/runs/${counting}/approval`, { body: { decision: "approve" } })).status).toBe(200)
    expect(await ended(counting)).toMatchObject({ status: "completed", answer: expect.stringMatching(/3000000/) })
    expect((await api(`/api/agent-runs/${counting}/events`)).json.items.map((e: any) => e.type)).toEqual([
      "model_call",
      "tool_call",
      "approval_requested",
      "approval",
      "tool_call",
      "model_call",
      "completed"
    ])
  }, 60_000)

  it.skipIf(skip)("a clarification is answered and a run cancelled through the conversation's routes", async () => {
    script = (req) => {
      const last = req.body.messages.at(-1)
      const answered = JSON.stringify(last).includes("the 2026 ones")
      if (req.toolResults.length === 0) return { toolCalls: [{ name: "ask_user", args: { question: "Which orders?" } }] }
      return { text: answered ? "Counted the 2026 ones." : "?" }
    }
    const conversation = await converse()
    const base = `/api/chat/conversations/${conversation}`
    const asking = await say(conversation, "Count the orders")
    expect((await until(asking, "waiting_for_user")).pending).toMatchObject({ kind: "question", question: "Which orders?" })
    expect((await api(`${base}/runs/${asking}/clarification`, { body: { answer: "" } })).status).toBe(400)
    expect((await api(`${base}/runs/${asking}/clarification`, { body: { answer: "a\u0000b" } })).status).toBe(400)
    expect((await api(`${base}/runs/${asking}/approval`, { body: { decision: "approve" } })).status).toBe(409)
    expect((await api(`${base}/runs/${asking}/clarification`, { body: { answer: "the 2026 ones" } })).status).toBe(200)
    expect(await ended(asking)).toMatchObject({ status: "completed", answer: "Counted the 2026 ones." })

    const cancelled = await say(conversation, "Count them again")
    await until(cancelled, "waiting_for_user")
    const stop = await api(`${base}/runs/${cancelled}/cancel`, { method: "POST" })
    expect(stop.status, stop.text).toBe(200)
    expect(await ended(cancelled)).toMatchObject({ status: "cancelled" })
    expect((await api(`${base}/runs/${cancelled}/cancel`, { method: "POST" })).status).toBe(409)
    // A run of another conversation is not this one's.
    expect((await api(`/api/chat/conversations/${await converse()}/runs/${asking}/events`)).status).toBe(404)
  }, 60_000)

  it.skipIf(skip)("traces show every model and tool call with totals; a query id resolves to its SQL, run and message; a read key sees no rows", async () => {
    script = (req) =>
      req.toolResults.length === 0
        ? { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "select id, total from orders where total::text = '420'" } }], usage: { input: 100, output: 10 } }
        : { text: "Order 42 totals 420.", usage: { input: 200, output: 20 } }
    const thread = await api("/api/chat/traces/threads", { body: { title: "Trace me", connection_name: "shop" } })
    expect(thread.status, thread.text).toBe(201)
    expect(thread.json).toMatchObject({ title: "Trace me", runs: 0, model_calls: 0, tool_calls: 0, cost_usd: 0 })
    const runId = await say(thread.json.id, "Which order totals 420?")
    await ended(runId)

    const listed = (await api("/api/chat/traces/threads")).json.items.find((t: any) => t.id === thread.json.id)
    expect(listed).toMatchObject({ runs: 1, model_calls: 2, tool_calls: 1, input_tokens: 300, output_tokens: 30 })
    expect(listed.cost_usd).toBeCloseTo((300 * 3 + 30 * 15) / 1e6, 9)
    const traced = (await api(`/api/chat/traces/threads/${thread.json.id}/events`)).json
    expect(traced.truncated).toBe(false)
    expect(traced.items.map((e: any) => [e.run_id, e.type])).toEqual([
      [runId, "model_call"],
      [runId, "tool_call"],
      [runId, "model_call"],
      [runId, "completed"]
    ])
    const toolCall = traced.items[1]
    expect(toolCall.data).toMatchObject({ tool: "query_database", sql: "select id, total from orders where total::text = '420'", rows: 1 })
    expect(typeof toolCall.data.duration_ms).toBe("number")

    // The query id in the tool call resolves to what produced it.
    const queryId = toolCall.data.query_ids[0]
    const trail = await eventually(() => api(`/api/analysis-trails/resolve?query_id=${queryId}`), (r) => r.status === 200, "the trail")
    expect(trail.json).toMatchObject({
      query_id: queryId,
      connection_name: "shop",
      sql: "select id, total from orders where total::text = '420'",
      surface: "agent",
      outcome: "success",
      rows: 1,
      run_id: runId,
      conversation_id: thread.json.id,
      message_id: `${runId}.answer`
    })

    // A key that may read but not query: what happened, not the rows or the model's words; SQL as in the audit log.
    const reader = (await api("/api/keys", { key: admin, body: { name: "trace reader", scopes: ["read"] } })).json.key
    const readerTrace = JSON.stringify((await api(`/api/chat/traces/threads/${thread.json.id}/events`, { key: reader })).json)
    expect(readerTrace).not.toMatch(/\b420\b/)
    expect(readerTrace).toContain("result_withheld")
    const readerMessages = (await api(`/api/chat/conversations/${thread.json.id}/messages`, { key: reader })).json.items
    expect(readerMessages.map((m: any) => m.content)).toEqual(["Which order totals 420?", null])
    const readerTrail = (await api(`/api/analysis-trails/resolve?query_id=${queryId}`, { key: reader })).json
    expect(readerTrail.sql).not.toMatch(/\b420\b/)
    expect(readerTrail.run_id).toBe(runId)

    // Bad input is refused and changes nothing.
    expect((await api("/api/analysis-trails/resolve")).status).toBe(400)
    expect((await api("/api/analysis-trails/resolve?query_id=nope")).status).toBe(404)
    expect((await api("/api/chat/conversations", { body: { title: "" } })).status).toBe(400)
    expect((await api("/api/chat/conversations", { body: { connection_name: "nope" } })).status).toBe(404)
    expect((await api("/api/chat/conversations", { body: { color: "red" } })).status).toBe(400)
    expect((await api("/api/chat/conversations", { body: { title: "a\u0000b" } })).status).toBe(400)
    expect((await api("/api/chat/conversations?cursor=WyJ4IiwieSJd")).status).toBe(400)
    expect((await api("/api/chat/traces/threads?cursor=WyJ4IiwieSJd")).status).toBe(400)
    for (const path of ["/api/chat/conversations/%00", "/api/chat/traces/threads/%00/events", "/api/analysis-trails/resolve?query_id=%00"]) {
      expect((await api(path)).status, path).toBe(400)
    }
    expect((await api(`/api/chat/conversations/${thread.json.id}/messages`, { body: { content: "" } })).status).toBe(400)
    expect((await api("/api/chat/conversations/conv_nope/messages", { body: { content: "hi" } })).status).toBe(404)
    expect((await api(`/api/chat/conversations/${thread.json.id}/messages`, { key: reader, body: { content: "hi" } })).status).toBe(403)
    expect((await api(`/api/chat/conversations/${thread.json.id}/messages`)).json.items).toHaveLength(2)
  }, 60_000)
})
