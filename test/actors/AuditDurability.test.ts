import { randomBytes } from "node:crypto"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { startModelFake } from "../fakes/ModelFake"
import { type GatewayProcess, localKey, startGateway } from "../support/Gateway"
import { request } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const hasPostgres = await postgresAvailable()

/** Load tests must not trip the per-IP limit: every request here should be a plain 200. */
const LOAD_ENV = { SP_RATE_LIMIT_GENERAL_RPM: "1000000", SP_RATE_LIMIT_EXPENSIVE_RPM: "1000000", SP_RATE_LIMIT_AUTH_RPM: "1000000", SP_PER_KEY_RPM: "1000000", SP_PER_ORG_RPM: "1000000" }
const CONCURRENCY = 8
const LOAD_MS = 1500
/** On a slow machine the load keeps going (up to MAX_LOAD_MS) until enough requests were acknowledged. */
const MIN_ACKNOWLEDGED = 100
const MAX_LOAD_MS = 8000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const requestId = (headers: Record<string, unknown>) => String(headers["x-request-id"])

interface LoadResult {
  /** x-request-id of every response that fully arrived with a 2xx status. */
  readonly acknowledged: Array<string>
  /** Requests still waiting for an answer at the instant SIGKILL was sent. */
  readonly inFlightAtKill: number
  readonly failed: number
  readonly otherStatuses: Array<number>
}

type Send = (seq: number, userAgent: string) => Promise<{ status: number; headers: Record<string, unknown> }>

/** Keeps CONCURRENCY requests in flight for ~LOAD_MS, then SIGKILLs the gateway without draining. */
const loadThenKill = async (
  gateway: GatewayProcess,
  key: string,
  tag: string,
  send: Send = (_, userAgent) => request(gateway.url, "/api/plan", { key, headers: { "user-agent": userAgent } })
): Promise<LoadResult> => {
  const acknowledged: Array<string> = []
  const otherStatuses: Array<number> = []
  let failed = 0
  let pending = 0
  let stop = false
  let seq = 0
  const worker = async () => {
    while (!stop) {
      pending++
      try {
        const n = seq++
        const res = await send(n, `${tag}-${n}`)
        if (res.status >= 200 && res.status < 300) acknowledged.push(requestId(res.headers))
        else otherStatuses.push(res.status)
      } catch {
        failed++ // connection reset/refused by the kill: never acknowledged, so not counted
      } finally {
        pending--
      }
    }
  }
  const workers = Array.from({ length: CONCURRENCY }, worker)
  const started = Date.now()
  for (;;) {
    const elapsed = Date.now() - started
    if (elapsed >= MAX_LOAD_MS || (elapsed >= LOAD_MS && acknowledged.length >= MIN_ACKNOWLEDGED)) break
    await sleep(20)
  }
  const inFlightAtKill = pending
  const killed = gateway.kill()
  stop = true
  await killed
  await Promise.all(workers)
  return { acknowledged, inFlightAtKill, failed, otherStatuses }
}

const expectLoadMeaningful = (result: LoadResult) => {
  expect(result.otherStatuses).toEqual([])
  expect(result.inFlightAtKill).toBeGreaterThan(0)
  expect(result.acknowledged.length).toBeGreaterThanOrEqual(50)
  expect(new Set(result.acknowledged).size).toBe(result.acknowledged.length)
}

describe.skipIf(!hasPostgres)("audit durability on PostgreSQL", () => {
  const databases: Array<TestDatabase> = []
  const gateways: Array<GatewayProcess> = []
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.kill()))
    await Promise.all(databases.map((d) => d.drop()))
  })

  it("300 concurrent requests leave exactly 300 committed rows, one per x-request-id, written in group commits", async () => {
    const database = await createTestDatabase()
    databases.push(database)
    const gateway = await startGateway({ databaseUrl: database.url, env: LOAD_ENV })
    gateways.push(gateway)
    const key = await localKey(gateway)
    const N = 300
    const tag = `durability-burst-${randomBytes(4).toString("hex")}`

    const responses = await Promise.all(
      Array.from({ length: N }, (_, i) => request(gateway.url, "/api/plan", { key, headers: { "user-agent": `${tag}-${i}` } }))
    )
    expect(responses.map((r) => r.status)).toEqual(Array(N).fill(200))
    const ids = responses.map((r) => requestId(r.headers))
    expect(new Set(ids).size).toBe(N)

    // The row is committed before the response is written, so it is visible now, without waiting.
    const rows = await database.query<{
      request_id: string
      user_agent: string
      method: string
      route: string
      status: number
      outcome: string
      org_id: string | null
      key_id: string | null
      event_type: string
      xmin: string
    }>(
      `select request_id, user_agent, method, route, status, outcome, org_id, key_id, event_type, xmin::text as xmin
       from gateway_audit_logs where user_agent like $1`,
      [`${tag}-%`]
    )
    expect(rows.length).toBe(N)
    expect(new Set(rows.map((r) => r.request_id))).toEqual(new Set(ids))
    expect(new Set(rows.map((r) => r.user_agent)).size).toBe(N)
    for (const row of rows) {
      expect(row).toMatchObject({ method: "GET", route: "/api/plan", status: 200, outcome: "success", event_type: "api" })
      expect(row.org_id).not.toBeNull()
      expect(row.key_id).not.toBeNull()
    }
    // Rows written by one INSERT share a transaction id (xmin): fewer transactions than rows means
    // rows were grouped, and no transaction holds more than one batch (500 rows).
    const perTransaction = new Map<string, number>()
    for (const row of rows) perTransaction.set(row.xmin, (perTransaction.get(row.xmin) ?? 0) + 1)
    expect(perTransaction.size).toBeLessThan(N)
    expect(Math.max(...perTransaction.values())).toBeLessThanOrEqual(500)
  })

  it("kill -9 under load: every request acknowledged with a 2xx has its audit row", async () => {
    const database = await createTestDatabase()
    databases.push(database)
    const gateway = await startGateway({ databaseUrl: database.url, env: LOAD_ENV })
    gateways.push(gateway)
    const key = await localKey(gateway)
    const tag = `durability-kill-pg-${randomBytes(4).toString("hex")}`

    const result = await loadThenKill(gateway, key, tag)
    expectLoadMeaningful(result)

    const rows = await database.query<{ request_id: string }>(
      `select request_id from gateway_audit_logs where user_agent like $1`,
      [`${tag}-%`]
    )
    const stored = new Set(rows.map((r) => r.request_id))
    const missing = result.acknowledged.filter((id) => !stored.has(id))
    expect(missing, `${missing.length} of ${result.acknowledged.length} acknowledged requests have no audit row`).toEqual([])
  })
})

describe("audit durability on the embedded store", () => {
  const gateways: Array<GatewayProcess> = []
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.kill()))
  })

  it("kill -9 under load: a new gateway recovers the store and shows every acknowledged request", async () => {
    const first = await startGateway({ env: LOAD_ENV })
    gateways.push(first)
    const key = await localKey(first)
    const tag = `durability-kill-embedded-${randomBytes(4).toString("hex")}`

    const result = await loadThenKill(first, key, tag)
    expectLoadMeaningful(result)

    // The killed process left its lock file behind; the new one must take over the store.
    const second = await startGateway({ dataDir: first.dataDir, env: LOAD_ENV })
    gateways.push(second)
    const key2 = await localKey(second)
    expect(key2).toBe(key)
    const exported = await request(second.url, "/api/audit/export?format=json", { key: key2 })
    expect(exported.status).toBe(200)
    const rows = exported.json as Array<{ request_id: string; user_agent: string | null }>
    expect(Array.isArray(rows)).toBe(true)
    const stored = new Set(rows.filter((r) => r.user_agent?.startsWith(`${tag}-`)).map((r) => r.request_id))
    const missing = result.acknowledged.filter((id) => !stored.has(id))
    expect(missing, `${missing.length} of ${result.acknowledged.length} acknowledged requests have no audit row`).toEqual([])
  })
})

/** Mixed load: reads, audit reads, and key and connection creations, each named after its request's user agent. */
const mixed =
  (gateway: GatewayProcess, key: string): Send =>
  (seq, userAgent) => {
    const headers = { "user-agent": userAgent }
    switch (seq % 4) {
      case 0:
        return request(gateway.url, "/api/plan", { key, headers })
      case 1:
        return request(gateway.url, "/api/keys", { key, headers, body: { name: userAgent, scopes: ["read"] } })
      case 2:
        return request(gateway.url, "/api/connections", { key, headers, body: { name: userAgent, db_type: "sqlite", database: `${userAgent}.db` } })
      default:
        return request(gateway.url, "/api/audit?limit=5", { key, headers })
    }
  }

interface Stored {
  readonly auditAgents: ReadonlySet<string>
  readonly auditRequestIds: ReadonlySet<string>
  readonly keys: ReadonlyArray<string>
  readonly connections: ReadonlyArray<string>
}

/** Every acknowledged request has its row, and every key and connection that exists has the row of the request that made it. */
const expectEverythingOnRecord = (result: LoadResult, stored: Stored) => {
  const missing = result.acknowledged.filter((id) => !stored.auditRequestIds.has(id))
  expect(missing, `${missing.length} of ${result.acknowledged.length} acknowledged requests have no audit row`).toEqual([])
  const unrecorded = [...stored.keys, ...stored.connections].filter((name) => !stored.auditAgents.has(name))
  expect(unrecorded, `${unrecorded.length} changes exist without an audit row`).toEqual([])
  expect(stored.keys.length + stored.connections.length).toBeGreaterThan(10)
}

describe.skipIf(!hasPostgres)("changes and their audit rows on PostgreSQL", () => {
  const databases: Array<TestDatabase> = []
  const gateways: Array<GatewayProcess> = []
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.kill()))
    await Promise.all(databases.map((d) => d.drop()))
  })

  const start = async () => {
    const database = await createTestDatabase()
    databases.push(database)
    const gateway = await startGateway({ databaseUrl: database.url, env: LOAD_ENV })
    gateways.push(gateway)
    return { database, gateway, key: await localKey(gateway) }
  }

  it("a change commits with its audit row: while audit writes stall, a created key does not exist yet, and a kill leaves neither", async () => {
    const { database, gateway, key } = await start()
    const name = `stalled-${randomBytes(4).toString("hex")}`
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    try {
      await admin.query("begin")
      await admin.query("lock table gateway_audit_logs in exclusive mode")
      const creating = request(gateway.url, "/api/keys", { key, headers: { "user-agent": name }, body: { name, scopes: ["read"] } }).catch(() => null)
      await sleep(700)
      const keys = await database.query("select name from api_keys where name = $1", [name])
      await gateway.kill()
      await admin.query("rollback")
      await creating
      const rows = await database.query("select id from gateway_audit_logs where user_agent = $1", [name])
      const after = await database.query("select name from api_keys where name = $1", [name])
      expect({ keyWhileStalled: keys.length, keyAfterKill: after.length, rows: rows.length }).toEqual({ keyWhileStalled: 0, keyAfterKill: 0, rows: 0 })
    } finally {
      await admin.end()
    }
  })

  it("an agent run's tool call commits its change with its audit row: while audit writes stall, its proposal does not exist yet, and a kill leaves neither", async () => {
    const database = await createTestDatabase()
    databases.push(database)
    const title = `stalled-proposal-${randomBytes(4).toString("hex")}`
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    // The model asks for one proposal; the audit log is locked before it answers, so the tool call runs while audit writes wait.
    const fake = await startModelFake(async (req) => {
      if (req.toolResults.length > 0) return { text: "done" }
      await admin.query("begin")
      await admin.query("lock table gateway_audit_logs in exclusive mode")
      return { toolCalls: [{ name: "propose_knowledge", args: { scope: "org", category: "decisions", title, body: "Orders are counted when paid." } }] }
    })
    const env = { SP_LLM_PROVIDER: "openai-compatible", SP_LLM_BASE_URL: `${fake.url}/v1`, SP_LLM_MODEL: "local-model", SP_JOB_POLL_MS: "100" }
    const gateway = await startGateway({ databaseUrl: database.url, env })
    gateways.push(gateway)
    try {
      const started = await request(gateway.url, "/api/agent-runs", { key: await localKey(gateway), body: { prompt: "Note how orders are counted" } })
      expect(started.status, started.text).toBe(202)
      // Whichever transaction writes the tool call's audit row (the change's own, or one after it) now waits for the lock.
      const waiting = async () =>
        (await database.query("select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike '%insert into gateway_audit_logs%'")).length > 0
      for (const deadline = Date.now() + 20_000; !(await waiting()); await sleep(50)) {
        if (Date.now() > deadline) throw new Error(`the tool call's audit row never waited for the lock:\n${gateway.logs()}`)
      }
      const proposals = async () => (await database.query("select id from knowledge_entries where title = $1", [title])).length
      const whileStalled = await proposals()
      await gateway.kill()
      await admin.query("rollback")
      const rows = await database.query("select id from gateway_audit_logs where event_type = 'agent_tool_call' and details->>'tool' = 'propose_knowledge'")
      expect({ whileStalled, afterKill: await proposals(), rows: rows.length }).toEqual({ whileStalled: 0, afterKill: 0, rows: 0 })
    } finally {
      await admin.end()
      await fake.close()
    }
  })

  it("the row committed with a change is completed with the answer's status and duration", async () => {
    const { database, gateway, key } = await start()
    const name = `completed-${randomBytes(4).toString("hex")}`
    const created = await request(gateway.url, "/api/keys", { key, headers: { "user-agent": name }, body: { name, scopes: ["read"] } })
    expect(created.status).toBe(201)
    const rows = await database.query("select status, outcome, event_type, method, route, request_id, duration_ms from gateway_audit_logs where user_agent = $1", [name])
    expect(rows).toEqual([
      { status: 201, outcome: "success", event_type: "api", method: "POST", route: "/api/keys", request_id: created.headers["x-request-id"], duration_ms: expect.any(Number) }
    ])
    expect(rows[0].duration_ms).toBeGreaterThan(0)
    // A refused change leaves one row with the refusal, and nothing else.
    const twin = await request(gateway.url, "/api/keys", { key, headers: { "user-agent": name }, body: { name, scopes: ["read"] } })
    expect(twin.status).toBe(409)
    const all = await database.query("select status from gateway_audit_logs where user_agent = $1 order by id", [name])
    expect(all.map((r) => r.status)).toEqual([201, 409])
  })

  it("kill -9 under mixed load: every acknowledged request and every committed change has its audit row", async () => {
    const { database, gateway, key } = await start()
    const tag = `mixed-pg-${randomBytes(4).toString("hex")}`
    const result = await loadThenKill(gateway, key, tag, mixed(gateway, key))
    expectLoadMeaningful(result)
    const rows = await database.query<{ request_id: string; user_agent: string }>("select request_id, user_agent from gateway_audit_logs where user_agent like $1", [`${tag}-%`])
    const names = async (table: string) => (await database.query<{ name: string }>(`select name from ${table} where name like $1`, [`${tag}-%`])).map((r) => r.name)
    expectEverythingOnRecord(result, {
      auditAgents: new Set(rows.map((r) => r.user_agent)),
      auditRequestIds: new Set(rows.map((r) => r.request_id)),
      keys: await names("api_keys"),
      connections: await names("connections")
    })
  })
})

describe("changes and their audit rows on the embedded store", () => {
  const gateways: Array<GatewayProcess> = []
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.kill()))
  })

  it("kill -9 under mixed load: every acknowledged request and every committed change has its audit row", async () => {
    const first = await startGateway({ env: LOAD_ENV })
    gateways.push(first)
    const key = await localKey(first)
    const tag = `mixed-embedded-${randomBytes(4).toString("hex")}`
    const result = await loadThenKill(first, key, tag, mixed(first, key))
    expectLoadMeaningful(result)

    const second = await startGateway({ dataDir: first.dataDir, env: LOAD_ENV })
    gateways.push(second)
    const exported = await request(second.url, "/api/audit/export?format=json", { key })
    const rows = (exported.json as Array<{ request_id: string; user_agent: string | null }>).filter((r) => r.user_agent?.startsWith(`${tag}-`))
    const keys = (await request(second.url, "/api/keys?limit=500", { key })).json.items.map((k: { name: string }) => k.name)
    const connectionNames = (await request(second.url, "/api/connections?limit=500", { key })).json.items.map((c: { name: string }) => c.name)
    expectEverythingOnRecord(result, {
      auditAgents: new Set(rows.map((r) => r.user_agent!)),
      auditRequestIds: new Set(rows.map((r) => r.request_id)),
      keys: keys.filter((n: string) => n.startsWith(`${tag}-`)),
      connections: connectionNames.filter((n: string) => n.startsWith(`${tag}-`))
    })
  })
})
