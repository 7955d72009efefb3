import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

describe("session budgets over HTTP", () => {
  let gateway: Gateway
  let admin: string
  let querier: { key: string; id: string }
  let other: string
  let reader: string
  let database: TestDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table items as select g as id from generate_series(1, 25) g")
    gateway = await startApp({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" } })
    admin = await localKey(gateway)
    const made = async (name: string, scopes: Array<string>) => (await request(gateway.url, "/api/keys", { key: admin, body: { name, scopes } })).json
    const q = await made("querier", ["query"])
    querier = { key: q.key, id: q.id }
    other = (await made("other", ["query"])).key
    reader = (await made("reader", ["read"])).key
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: admin, ...options })
  const query = (key: string, extra: Record<string, unknown> = {}) =>
    request(gateway.url, "/api/query", { key, body: { connection_name: "pg", sql: "select id from items", ...extra } })

  it.skipIf(skip)("a session budget is charged on each query, refuses once spent, and frees when deleted", async () => {
    const created = await api("/api/budget", { body: { session: "analysis-1", max_queries: 2, max_rows: 1000 } })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({
      session: "analysis-1",
      key_id: null,
      limits: { queries: 2, rows: 1000, bytes_scanned: null, cost: null, duration_ms: null },
      used: { queries: 0, rows: 0 },
      remaining: { queries: 2, rows: 1000, cost: null },
      exhausted: false
    })
    const id = created.json.id

    const first = await query(querier.key, { session: "analysis-1" })
    expect(first.status).toBe(200)
    expect(first.json.budget).toMatchObject({ id, remaining: { queries: 1, rows: 975 }, used: { cost: 25 } })
    const second = await query(other, { session: "analysis-1" })
    expect(second.json.budget).toMatchObject({ id, remaining: { queries: 0, rows: 950 }, exhausted: true })

    const refused = await query(querier.key, { session: "analysis-1" })
    expect([refused.status, refused.json.code, refused.json.budget_id]).toEqual([429, "budget_exhausted", id])
    expect(refused.json.message).toMatch(/session "analysis-1" is spent \(queries\)/)
    const logs = await api("/api/audit?event_type=query&outcome=refused&limit=10")
    expect(logs.json.items.find((r: { request_id: string }) => r.request_id === refused.headers["x-request-id"])).toMatchObject({
      status: 429,
      outcome: "refused",
      block_reason: "budget_exhausted"
    })
    const charged = await api("/api/audit?event_type=query&outcome=success&limit=10")
    expect(charged.json.items.find((r: { request_id: string }) => r.request_id === first.headers["x-request-id"]).details).toMatchObject({
      budget: { id, charged: { queries: 1, rows: 25, cost: 25 } }
    })

    // Queries outside the session are not affected.
    expect((await query(querier.key)).json.budget).toBeNull()
    expect((await api(`/api/budget/${id}`, { key: reader })).json).toMatchObject({ used: { queries: 2, rows: 50 }, exhausted: true })
    expect((await api("/api/budget", { key: reader })).json.items.map((b: { id: string }) => b.id)).toContain(id)

    expect((await api(`/api/budget/${id}`, { method: "DELETE" })).status).toBe(204)
    expect((await query(querier.key, { session: "analysis-1" })).status).toBe(200)
    expect((await api(`/api/budget/${id}`)).status).toBe(404)
  })

  it.skipIf(skip)("a key's budget caps rows across every query of that key", async () => {
    const created = await api("/api/budget", { body: { key_id: querier.id, max_rows: 30 } })
    expect(created.status).toBe(201)
    expect((await query(querier.key)).json.budget).toMatchObject({ remaining: { rows: 5 } })
    // A query gets at most the rows left: the second is cut at 5, the third is refused.
    const second = (await query(querier.key)).json
    expect([second.row_count, second.completeness]).toEqual([5, "truncated"])
    expect(second.budget).toMatchObject({ used: { rows: 30 }, remaining: { rows: 0 }, exhausted: true })
    expect((await query(querier.key)).json.code).toBe("budget_exhausted")
    expect((await query(other)).status).toBe(200)
    expect((await api(`/api/budget/${created.json.id}`, { method: "DELETE" })).status).toBe(204)
  })

  it.skipIf(skip)("30 concurrent queries on a 3-query budget: exactly 3 run, 27 are refused", async () => {
    const created = await api("/api/budget", { body: { session: "burst", max_queries: 3 } })
    const answers = await Promise.all(Array.from({ length: 30 }, () => query(querier.key, { session: "burst" })))
    const statuses = answers.map((a) => a.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(3)
    expect(answers.filter((a) => a.status === 429 && a.json.code === "budget_exhausted")).toHaveLength(27)
    expect((await api(`/api/budget/${created.json.id}`)).json).toMatchObject({ used: { queries: 3, rows: 75 }, exhausted: true })
  })

  it.skipIf(skip)("concurrent queries never spend more rows than the budget: a query gets at most the rows left", async () => {
    const created = await api("/api/budget", { body: { session: "rows-burst", max_rows: 60 } })
    const answers = await Promise.all(Array.from({ length: 10 }, () => query(querier.key, { session: "rows-burst" })))
    const ran = answers.filter((a) => a.status === 200)
    expect(answers.filter((a) => a.status !== 200).map((a) => [a.status, a.json.code])).toEqual(
      Array.from({ length: 10 - ran.length }, () => [429, "budget_exhausted"])
    )
    let sent = ran.reduce((total, a) => total + a.json.row_count, 0)
    expect(sent).toBeLessThanOrEqual(60)
    expect((await api(`/api/budget/${created.json.id}`)).json.used.rows).toBe(sent)
    // What is left goes to the next queries, the last one cut at the budget.
    const after: Array<{ status: number; json: any }> = []
    for (let answer = await query(querier.key, { session: "rows-burst" }); answer.status === 200; answer = await query(querier.key, { session: "rows-burst" }))
      after.push(answer)
    sent += after.reduce((total, a) => total + a.json.row_count, 0)
    expect(sent).toBe(60)
    expect([...ran, ...after].filter((a) => a.json.completeness === "truncated").map((a) => a.json.truncated_at)).toEqual([10])
    expect((await api(`/api/budget/${created.json.id}`)).json).toMatchObject({ used: { rows: 60 }, remaining: { rows: 0 }, exhausted: true })
  })

  it.skipIf(skip)("a query that fails is not charged: its reservation is given back", async () => {
    const created = await api("/api/budget", { body: { session: "failing", max_queries: 1, max_rows: 100 } })
    const failed = await query(querier.key, { session: "failing", sql: "select * from nowhere" })
    expect([failed.status, failed.json.code]).toEqual([400, "query_failed"])
    expect((await api(`/api/budget/${created.json.id}`)).json).toMatchObject({ used: { queries: 0, rows: 0 }, exhausted: false })
    expect((await query(querier.key, { session: "failing" })).json.budget).toMatchObject({ used: { queries: 1, rows: 25 }, exhausted: true })
  })

  it.skipIf(skip)("refuses bad budgets with a clear error and stores nothing", async () => {
    const bad: Array<[unknown, number, RegExp]> = [
      [{ max_queries: 1 }, 400, /session or a key_id/],
      [{ session: "s" }, 400, /at least one of max_queries/],
      [{ session: "s", max_rows: -1 }, 400, /non-negative/],
      [{ session: "has spaces", max_rows: 1 }, 400, /session must be/],
      [{ session: "s", max_rows: 1, extra: true }, 400, /extra/],
      [{ key_id: "key_nope", max_rows: 1 }, 400, /no API key "key_nope"/]
    ]
    for (const [body, status, message] of bad) {
      const refused = await api("/api/budget", { body })
      expect([refused.status, refused.json.code], JSON.stringify(body)).toEqual([status, "invalid_request"])
      expect(refused.json.message).toMatch(message)
    }
    expect((await api("/api/budget", { key: reader, body: { session: "s", max_rows: 1 } })).status).toBe(403)
    expect((await api("/api/budget", { body: { session: "dup", max_rows: 1 } })).status).toBe(201)
    const duplicate = await api("/api/budget", { body: { session: "dup", max_rows: 2 } })
    expect([duplicate.status, duplicate.json.code]).toEqual([409, "conflict"])
    expect((await api("/api/budget/not-an-id")).status).toBe(400)
    expect((await api(`/api/budget/budget_${"0".repeat(32)}`)).status).toBe(404)
    expect((await api("/api/budget")).json.items.filter((b: { session: string }) => b.session === "s")).toEqual([])
    expect((await query(querier.key, { session: "bad session" })).json.code).toBe("invalid_request")
  })
})

describe("a budget shared by two replicas on one PostgreSQL store", () => {
  let store: TestDatabase
  let database: TestDatabase
  let replicas: Array<Gateway> = []

  beforeAll(async () => {
    if (skip) return
    ;[store, database] = await Promise.all([createTestDatabase(), createTestDatabase()])
    await database.query("create table items as select g as id from generate_series(1, 25) g")
    const env = { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" }
    replicas = [await startApp({ databaseUrl: store.url, env })]
    // The second replica shares the first one's data directory, so it finds the local key already made.
    replicas.push(await startApp({ databaseUrl: store.url, dataDir: replicas[0]!.dataDir, env }))
  })
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()))
    await Promise.all([store?.drop(), database?.drop()])
  })

  it.skipIf(skip)("30 concurrent queries spread over both replicas on a 3-query budget: exactly 3 run", async () => {
    const admin = await localKey(replicas[0]!)
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(replicas[0]!.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    const created = await request(replicas[0]!.url, "/api/budget", { key: admin, body: { session: "shared", max_queries: 4 } })
    expect(created.status).toBe(201)
    const query = (replica: Gateway) =>
      request(replica.url, "/api/query", { key: admin, body: { connection_name: "pg", sql: "select id from items", session: "shared" } })
    // The other replica learns of a new budget within a second: the first query it charges spends one of the four.
    await expect.poll(async () => (await query(replicas[1]!)).json.budget, { timeout: 3000 }).toMatchObject({ used: { queries: 1 } })
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => query(replicas[i % 2]!)))
    expect(answers.filter((a) => a.status === 200)).toHaveLength(3)
    expect(answers.filter((a) => a.status === 429 && a.json.code === "budget_exhausted")).toHaveLength(27)
    const budget = await request(replicas[1]!.url, `/api/budget/${created.json.id}`, { key: admin })
    expect(budget.json).toMatchObject({ used: { queries: 4, rows: 100 }, exhausted: true })
  })
})
