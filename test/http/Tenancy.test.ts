import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Eventually"
import { freePort, type Gateway, startGateway } from "../support/Gateway"
import { type HttpResult, request, type RequestOptions } from "../support/Http"
import { type IdentityProvider, now, startIdentityProvider } from "../support/IdentityProvider"
import { Relay } from "../support/Relay"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const skip = !hasPostgres

const LEEWAY_SECONDS = 30

describe("tenancy and cloud sessions over HTTP on the postgresql store", () => {
  let gateway: Gateway
  let database: TestDatabase | undefined
  let idp: IdentityProvider | undefined
  let relay: Relay
  let cloudEnv: Record<string, string>

  beforeAll(async () => {
    if (skip) return
    idp = await startIdentityProvider()
    database = await createTestDatabase()
    // Customer databases are reached through a relay: the store's own address is off limits to tenants.
    relay = new Relay(await freePort())
    await relay.open()
    cloudEnv = {
      SP_DEPLOYMENT_MODE: "cloud",
      SP_JWKS_URL: idp.jwksUrl,
      SP_JWT_LEEWAY: String(LEEWAY_SECONDS),
      // Every key route is in the "auth" per-IP class (60/min by default); this file makes more than that.
      SP_RATE_LIMIT_AUTH_RPM: "10000"
    }
    gateway = await startGateway({ databaseUrl: database.url, env: { ...cloudEnv, SP_EGRESS_ALLOW_LOOPBACK: "true" } })
  })
  afterAll(async () => {
    await gateway?.stop()
    await relay?.cut()
    await database?.drop()
    await idp?.close()
  })

  const api = (path: string, options: RequestOptions = {}) => request(gateway.url, path, options)

  const token: IdentityProvider["token"] = (options) => idp!.token(options)

  const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` })
  const withJwt = (path: string, jwt: string, options: RequestOptions = {}) =>
    api(path, { ...options, headers: { ...options.headers, ...bearer(jwt) } })

  const createKey = async (auth: { jwt?: string; key?: string }, body: unknown): Promise<HttpResult> =>
    auth.jwt !== undefined ? withJwt("/api/keys", auth.jwt, { body }) : api("/api/keys", { key: auth.key!, body })

  const provisioned = async (orgIds: ReadonlyArray<string>, userIds: ReadonlyArray<string>) => ({
    orgs: (await database!.query<{ id: string }>("select id from organizations where id = any($1)", [orgIds])).map((r) => r.id),
    users: (await database!.query<{ id: string }>("select id from users where id = any($1)", [userIds])).map((r) => r.id),
    memberships: await database!.query<{ org_id: string; user_id: string; role: string }>(
      "select org_id, user_id, role from memberships where org_id = any($1) or user_id = any($2)",
      [orgIds, userIds]
    )
  })

  it.skipIf(skip)("one org's key sees and touches nothing of another org: keys, deletes, audit, settings", async () => {
    const adminA = await token({ sub: "user_alice", orgId: "org_a", admin: true })
    const adminB = await token({ sub: "user_bob", orgId: "org_b", admin: true })
    const bRequestIds: Array<string> = []
    const asB = (res: HttpResult) => {
      expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
      bRequestIds.push(res.headers["x-request-id"] as string)
      return res
    }

    const createdA = await createKey({ jwt: adminA }, { name: "a-admin", scopes: ["admin", "read"] })
    expect(createdA.status, createdA.text).toBe(201)
    expect(createdA.json.organization).toBe("org_a")
    const keyA = createdA.json.key as string
    const readerA = await createKey({ key: keyA }, { name: "a-reader", scopes: ["read"] })
    expect(readerA.status, readerA.text).toBe(201)

    // Same key names in B: names are unique per org, not globally.
    const createdB = asB(await createKey({ jwt: adminB }, { name: "a-admin", scopes: ["admin", "read"] }))
    expect(createdB.status, createdB.text).toBe(201)
    expect(createdB.json.organization).toBe("org_b")
    const keyB = createdB.json.key as string
    const readerB = asB(await createKey({ key: keyB }, { name: "b-reader", scopes: ["read"] }))
    expect(readerB.status, readerB.text).toBe(201)
    const bKeyIds = [createdB.json.id as string, readerB.json.id as string]
    expect(asB(await api("/api/plan", { key: readerB.json.key })).status).toBe(200)
    const putB = asB(await api("/api/settings", { key: keyB, method: "PUT", body: { default_row_limit: 500 } }))
    expect(putB.status, putB.text).toBe(200)
    expect(putB.json.default_row_limit).toBe(500)
    const refusedB = asB(await api("/api/keys", { key: readerB.json.key }))
    expect([refusedB.status, refusedB.json.code]).toEqual([403, "insufficient_scope"])

    // Keys: A lists exactly A's keys.
    const listA = await api("/api/keys?limit=500", { key: keyA })
    expect(listA.status).toBe(200)
    const listedIds = listA.json.items.map((k: { id: string }) => k.id).sort()
    expect(listedIds).toEqual([createdA.json.id, readerA.json.id].sort())
    expect(listA.json.items.every((k: { organization: string }) => k.organization === "org_a")).toBe(true)
    const listB = asB(await api("/api/keys?limit=500", { key: keyB }))
    expect(listB.json.items.map((k: { id: string }) => k.id).sort()).toEqual([...bKeyIds].sort())

    // Deletes: B's key ids do not exist for A, and B's keys keep working.
    for (const id of bKeyIds) {
      const deleted = await api(`/api/keys/${id}`, { key: keyA, method: "DELETE" })
      expect([deleted.status, deleted.json?.code]).toEqual([404, "not_found"])
    }
    const stillB = asB(await api("/api/plan", { key: readerB.json.key }))
    expect(stillB.status).toBe(200)
    const stillBAdmin = asB(await api("/api/keys", { key: keyB }))
    expect(stillBAdmin.status).toBe(200)
    expect(stillBAdmin.json.items).toHaveLength(2)
    expect((await database!.query("select id from api_keys where id = any($1)", [bKeyIds])).length).toBe(2)

    // Audit: B's requests are in B's log only.
    const auditB = await api("/api/audit?limit=500", { key: keyB })
    expect(auditB.status).toBe(200)
    const bLogged = new Set(auditB.json.items.map((e: { request_id: string }) => e.request_id))
    for (const id of bRequestIds) expect(bLogged.has(id), `B's own request ${id} is in B's audit log`).toBe(true)
    bRequestIds.push(auditB.headers["x-request-id"] as string)

    const auditA = await api("/api/audit?limit=500", { key: keyA })
    expect(auditA.status).toBe(200)
    expect(auditA.json.items.length).toBeGreaterThan(0)
    expect(auditA.json.next_cursor).toBeNull()
    const leaked = auditA.json.items.filter((e: { request_id: string }) => bRequestIds.includes(e.request_id))
    expect(leaked).toEqual([])
    const foreignKeyRows = auditA.json.items.filter((e: { key_id: string | null }) => e.key_id !== null && bKeyIds.includes(e.key_id))
    expect(foreignKeyRows).toEqual([])
    expect(JSON.stringify(auditA.json)).not.toContain("user_bob")
    expect(JSON.stringify(auditA.json)).not.toContain(createdB.json.prefix)
    // A's own deletes of B's ids are in A's log as errors, keyed to A's key.
    const aDeletes = auditA.json.items.filter((e: { route: string }) => e.route.startsWith("/api/keys/"))
    expect(aDeletes).toHaveLength(2)
    expect(aDeletes.every((e: { key_id: string; status: number }) => e.key_id === createdA.json.id && e.status === 404)).toBe(true)
    // Filtering A's log by one of B's key ids finds nothing.
    const filtered = await api(`/api/audit?key_id=${bKeyIds[0]}`, { key: keyA })
    expect(filtered.status).toBe(200)
    expect(filtered.json.items).toEqual([])

    // Stats count A's rows only: what A's log held, plus the two audit reads made since.
    const statsA = await api("/api/audit/stats", { key: keyA })
    expect(statsA.status).toBe(200)
    expect(statsA.json.total).toBe(auditA.json.items.length + 2)

    // Settings: B's write is B's alone.
    const settingsA = await api("/api/settings", { key: keyA })
    expect(settingsA.status).toBe(200)
    expect(settingsA.json.default_row_limit).toBe(10_000)
    const settingsAJwt = await withJwt("/api/settings", adminA)
    expect(settingsAJwt.json.default_row_limit).toBe(10_000)
    const settingsB = await api("/api/settings", { key: keyB })
    expect(settingsB.json.default_row_limit).toBe(500)

    // The security summary counts A's keys only.
    const statusA = await api("/api/security/status", { key: keyA })
    expect(statusA.status).toBe(200)
    expect(statusA.json.keys).toMatchObject({ total: 2, admin: 1 })
  })

  it.skipIf(skip)("one org's connections are invisible to another: read, test, edit, clone, delete are 404; names are per org", async () => {
    const adminA = await token({ sub: "user_carol", orgId: "org_ca", admin: true })
    const adminB = await token({ sub: "user_dan", orgId: "org_cb", admin: true })
    const body = { name: "shared_name", db_type: "postgresql", host: "127.0.0.1", port: relay.port, database: database!.name, username: "root", password: "pw-tenant-a" }
    expect((await withJwt("/api/connections", adminA, { body })).status).toBe(201)
    expect((await withJwt("/api/connections", adminB)).json.items).toEqual([])
    expect((await withJwt("/api/connections/health", adminB)).json.items).toEqual([])
    expect((await withJwt("/api/connections/stats", adminB)).json).toMatchObject({ connections: 0, checks: 0 })
    for (const [path, method] of [
      ["/api/connections/shared_name", "GET"],
      ["/api/connections/shared_name/test", "POST"],
      ["/api/connections/shared_name/diagnose", "POST"],
      ["/api/connections/shared_name/capabilities", "GET"],
      ["/api/connections/shared_name/health", "GET"],
      ["/api/connections/shared_name/health/history", "GET"],
      ["/api/connections/shared_name", "DELETE"]
    ] as const) {
      const response = await withJwt(path, adminB, { method })
      expect(response.status, `${method} ${path}`).toBe(404)
    }
    expect((await withJwt("/api/connections/shared_name/clone", adminB, { body: { name: "stolen" } })).status).toBe(404)
    expect((await withJwt("/api/connections/shared_name", adminB, { method: "PUT", body })).status).toBe(404)
    // The same name in another org is a different connection; local files are refused in cloud.
    expect((await withJwt("/api/connections", adminB, { body: { ...body, password: "pw-tenant-b" } })).status).toBe(201)
    const local = await withJwt("/api/connections", adminB, { body: { name: "lite", db_type: "sqlite", database: "x.sqlite" } })
    expect(local.status).toBe(400)
    expect(local.json.message).toMatch(/cloud/)
    expect((await withJwt("/api/connections/shared_name/test", adminA, { method: "POST" })).json.ok).toBe(true)
    expect((await withJwt("/api/connections/shared_name", adminA)).json.password_set).toBe(true)
  })

  it.skipIf(skip)("schema snapshots, searches, changes and the schema cache stay within their org", async () => {
    const adminA = await token({ sub: "user_ivy", orgId: "org_sa", admin: true })
    const adminB = await token({ sub: "user_jon", orgId: "org_sb", admin: true })
    const other = await createTestDatabase()
    try {
      await database!.query("create table tenant_a_only (id int primary key, secret_note text)")
      await other.query("create table tenant_b_only (id int primary key)")
      const body = (dbName: string) => ({ name: "schemas", db_type: "postgresql", host: "127.0.0.1", port: relay.port, database: dbName, username: "root" })
      expect((await withJwt("/api/connections", adminA, { body: body(database!.name) })).status).toBe(201)
      const schemaA = await withJwt("/api/connections/schemas/schema", adminA)
      expect(schemaA.status, schemaA.text).toBe(200)
      expect(schemaA.json.tables.map((t: { name: string }) => t.name)).toContain("tenant_a_only")
      for (const path of ["/api/connections/schemas/schema", "/api/connections/schemas/schema/search?q=secret", "/api/connections/schemas/schema/diff-history", "/api/connections/schemas/schema/refresh-status"]) {
        expect((await withJwt(path, adminB)).status, path).toBe(404)
      }
      expect((await withJwt("/api/connections/schemas/schema/refresh", adminB, { method: "POST" })).status).toBe(404)
      expect((await withJwt("/api/schema/changes", adminB)).json.items).toEqual([])
      expect((await withJwt("/api/schema-cache/stats", adminB)).json).toMatchObject({ connections: 0, tables: 0 })
      expect((await withJwt("/api/schema-cache/invalidate", adminB, { body: {} })).json).toEqual({ invalidated: 0 })

      // B's connection of the same name is scanned on its own: A's snapshot is neither served nor touched.
      expect((await withJwt("/api/connections", adminB, { body: body(other.name) })).status).toBe(201)
      const schemaB = await withJwt("/api/connections/schemas/schema", adminB)
      expect(schemaB.json.tables.map((t: { name: string }) => t.name)).toEqual(["tenant_b_only"])
      const searchB = await withJwt("/api/connections/schemas/schema/search?q=secret%20note", adminB)
      expect(JSON.stringify(searchB.json)).not.toContain("tenant_a_only")
      expect((await withJwt("/api/connections/schemas/schema", adminA)).json.tables.map((t: { name: string }) => t.name)).toContain("tenant_a_only")
      const rows = await database!.query<{ org_id: string }>("select org_id from schema_snapshots")
      expect(new Set(rows.map((r) => r.org_id))).toEqual(new Set(["org_sa", "org_sb"]))
    } finally {
      await other.drop()
    }
  })

  it.skipIf(skip)("governed queries, cached results, PII rules and budgets stay within their org", async () => {
    const adminA = await token({ sub: "user_gina", orgId: "org_qa", admin: true })
    const adminB = await token({ sub: "user_hal", orgId: "org_qb", admin: true })
    const other = await createTestDatabase()
    try {
      await database!.query("create table tenant_rows (v text); insert into tenant_rows values ('from A')")
      await other.query("create table tenant_rows (v text); insert into tenant_rows values ('from B')")
      const body = (dbName: string) => ({ name: "cached", db_type: "postgresql", host: "127.0.0.1", port: relay.port, database: dbName, username: "root", result_cache_ttl: 60 })
      expect((await withJwt("/api/connections", adminA, { body: body(database!.name) })).status).toBe(201)
      const query = (jwt: string, connection = "cached") => withJwt("/api/query", jwt, { body: { connection_name: connection, sql: "select v from tenant_rows" } })
      const fromA = (await query(adminA)).json
      expect(fromA).toMatchObject({ rows: [["from A"]], cached: false })
      expect((await query(adminA)).json).toMatchObject({ rows: [["from A"]], cached: true })
      // Its analysis trail is A's alone.
      const trail = `/api/analysis-trails/resolve?query_id=${fromA.query_id}`
      expect((await eventually(() => withJwt(trail, adminA), (r) => r.status === 200, "A's trail")).json).toMatchObject({
        query_id: fromA.query_id,
        connection_name: "cached",
        surface: "rest",
        run_id: null
      })
      expect((await withJwt(trail, adminB)).status).toBe(404)
      // B has no such connection; once it has its own of the same name, the same text is not A's cached answer.
      expect((await query(adminB)).status).toBe(404)
      expect((await withJwt("/api/connections", adminB, { body: body(other.name) })).status).toBe(201)
      expect((await query(adminB)).json).toMatchObject({ rows: [["from B"]], cached: false })
      expect((await withJwt("/api/cache/stats", adminB)).json).toMatchObject({ entries: 1, hits: 0 })
      expect((await withJwt("/api/cache/stats", adminA)).json).toMatchObject({ entries: 1, hits: 1 })

      const rules = { rules: [{ table: "tenant_rows", column: "v", action: "redact" }] }
      expect((await withJwt("/api/connections/cached/pii", adminA, { method: "PUT", body: rules })).status).toBe(200)
      expect((await withJwt("/api/connections/cached/pii", adminB)).json).toEqual({ rules: [], version: 0 })
      expect((await query(adminA)).json.rows).toEqual([["[REDACTED]"]])
      expect((await query(adminB)).json.rows).toEqual([["from B"]])

      const budget = await withJwt("/api/budget", adminA, { body: { session: "shared-name", max_queries: 1 } })
      expect(budget.status).toBe(201)
      expect((await withJwt("/api/budget", adminB)).json.items).toEqual([])
      expect((await withJwt(`/api/budget/${budget.json.id}`, adminB)).status).toBe(404)
      expect((await withJwt(`/api/budget/${budget.json.id}`, adminB, { method: "DELETE" })).status).toBe(404)
      const inSession = (jwt: string) => withJwt("/api/query", jwt, { body: { connection_name: "cached", sql: "select 1", session: "shared-name" } })
      expect((await inSession(adminA)).status).toBe(200)
      expect((await inSession(adminA)).json.code).toBe("budget_exhausted")
      expect((await inSession(adminB)).json.budget).toBeNull()
    } finally {
      await other.drop()
    }
  })

  it.skipIf(skip)("agent runs and their events stay within their org; a session user's run acts as that user", async () => {
    const adminA = await token({ sub: "user_ivy", orgId: "org_ra", admin: true })
    const adminB = await token({ sub: "user_jon", orgId: "org_rb", admin: true })
    const started = await withJwt("/api/agent-runs", adminA, { body: { prompt: "secret question of A" } })
    expect(started.status, started.text).toBe(202)
    const id = started.json.id
    // No model is configured here: the run ends at once, as a failure its owner can read.
    const deadline = Date.now() + 15_000
    while ((await withJwt(`/api/agent-runs/${id}`, adminA)).json.status !== "failed" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    expect((await withJwt(`/api/agent-runs/${id}`, adminA)).json).toMatchObject({ status: "failed", error: { code: "model_not_configured" } })
    expect((await withJwt(`/api/agent-runs/${id}/events`, adminA)).json.items.map((e: any) => e.type)).toEqual(["failed"])
    expect((await withJwt("/api/agent-runs", adminB)).json.items).toEqual([])
    for (const [path, method] of [[`/api/agent-runs/${id}`, "GET"], [`/api/agent-runs/${id}/events`, "GET"], [`/api/agent-runs/${id}`, "PATCH"]] as const) {
      const probe = await withJwt(path, adminB, { method, ...(method === "PATCH" ? { body: { action: "cancel" } } : {}) })
      expect([path, method, probe.status]).toEqual([path, method, 404])
    }
    const streamed = await withJwt(`/api/agent-runs/${id}/events`, adminB, { headers: { accept: "text/event-stream" } })
    expect(streamed.status).toBe(404)
    expect(streamed.text).not.toContain("secret question")

    // In its own org, only who started a run (or an admin) may cancel, answer or approve it.
    const memberA = await token({ sub: "user_kim", orgId: "org_ra" })
    const otherMember = await token({ sub: "user_lou", orgId: "org_ra" })
    const own = (await withJwt("/api/agent-runs", memberA, { body: { prompt: "mine" } })).json.id
    const theirs = await withJwt(`/api/agent-runs/${own}`, otherMember, { method: "PATCH", body: { action: "cancel" } })
    expect([theirs.status, theirs.json.code]).toEqual([403, "forbidden"])
    const byAdmin = await withJwt(`/api/agent-runs/${own}`, adminA, { method: "PATCH", body: { action: "cancel" } })
    expect([200, 409]).toContain(byAdmin.status)

    // A conversation, its messages, runs, trace and trails: the same.
    const conversation = (await withJwt("/api/chat/conversations", adminA, { body: { title: "secret plans of A" } })).json
    const posted = await withJwt(`/api/chat/conversations/${conversation.id}/messages`, adminA, { body: { content: "secret message of A" } })
    expect(posted.status, posted.text).toBe(202)
    const runId = posted.json.run.id
    expect((await withJwt("/api/chat/conversations", adminB)).json.items).toEqual([])
    expect((await withJwt("/api/chat/traces/threads", adminB)).json.items).toEqual([])
    const base = `/api/chat/conversations/${conversation.id}`
    for (const [path, method, body] of [
      [base, "GET", undefined],
      [`${base}/messages`, "GET", undefined],
      [`${base}/messages`, "POST", { content: "hello" }],
      [`${base}/runs/${runId}/events`, "GET", undefined],
      [`${base}/runs/${runId}/cancel`, "POST", {}],
      [`${base}/runs/${runId}/clarification`, "POST", { answer: "x" }],
      [`${base}/runs/${runId}/approval`, "POST", { decision: "approve" }],
      [`/api/chat/traces/threads/${conversation.id}/events`, "GET", undefined]
    ] as const) {
      const probe = await withJwt(path, adminB, { method, ...(body !== undefined ? { body } : {}) })
      expect([path, method, probe.status]).toEqual([path, method, 404])
      expect(probe.text).not.toContain("secret")
    }
    // B's own conversation does not open A's runs through its path.
    const ownB = (await withJwt("/api/chat/conversations", adminB, { body: {} })).json
    expect((await withJwt(`/api/chat/conversations/${ownB.id}/runs/${runId}/events`, adminB)).status).toBe(404)
  })

  it.skipIf(skip)("knowledge entries (history, search, retrievals, usage) and reports stay within their org; the same place is free in each", async () => {
    const adminA = await token({ sub: "user_nia", orgId: "org_ka", admin: true })
    const adminB = await token({ sub: "user_oto", orgId: "org_kb", admin: true })
    const entry = { scope: "org", category: "rules", title: "secret-rule", body: "The secret margin of A is 42 %." }
    const created = await withJwt("/api/knowledge", adminA, { body: entry })
    expect(created.status, created.text).toBe(201)
    const id = created.json.id
    await withJwt(`/api/knowledge/${id}`, adminA, { method: "PUT", body: { ...entry, body: "The secret margin of A is 43 %." } })
    expect((await withJwt("/api/knowledge?q=secret%20margin", adminA)).json.items.map((e: any) => e.id)).toEqual([id])

    expect((await withJwt("/api/knowledge", adminB)).json.items).toEqual([])
    expect((await withJwt("/api/knowledge?q=secret%20margin", adminB)).json.items).toEqual([])
    expect((await withJwt("/api/knowledge/retrievals?since_days=1", adminB)).json.items).toEqual([])
    expect((await withJwt("/api/knowledge/usage", adminB)).json.items).toEqual([])
    for (const [path, method, body] of [
      [`/api/knowledge/${id}`, "GET", undefined],
      [`/api/knowledge/${id}`, "PUT", entry],
      [`/api/knowledge/${id}`, "DELETE", undefined],
      [`/api/knowledge/${id}/approve`, "POST", undefined],
      [`/api/knowledge/${id}/edits`, "GET", undefined]
    ] as const) {
      const probe = await withJwt(path, adminB, { method, ...(body !== undefined ? { body } : {}) })
      expect([path, method, probe.status]).toEqual([path, method, 404])
      expect(probe.text).not.toContain("secret margin")
    }
    // Reports: the same.
    const report = (await withJwt("/api/reports", adminA, { body: { title: "secret report of A", html: "<p>secret margin</p>" } })).json
    expect((await withJwt("/api/reports", adminB)).json.items).toEqual([])
    for (const [method, body] of [["GET", undefined], ["PATCH", { title: "mine" }], ["DELETE", undefined]] as const) {
      const probe = await withJwt(`/api/reports/${report.id}`, adminB, { method, ...(body !== undefined ? { body } : {}) })
      expect([method, probe.status]).toEqual([method, 404])
      expect(probe.text).not.toContain("secret")
    }
    expect((await withJwt(`/api/reports/${report.id}`, adminA)).json).toMatchObject({ title: "secret report of A", view_count: 1 })
    // The same scope, category and title is B's own to take.
    expect((await withJwt("/api/knowledge", adminB, { body: entry })).status).toBe(201)
    expect((await withJwt(`/api/knowledge/${id}`, adminA)).json).toMatchObject({ body: "The secret margin of A is 43 %.", version: 2 })
  })

  it.skipIf(skip)("a tenant's connection never reaches the gateway's store, loopback or metadata addresses", async () => {
    const admin = await token({ sub: "user_erin", orgId: "org_egress", admin: true })
    const probe = (gw: Gateway, fields: Record<string, unknown>) =>
      request(gw.url, "/api/connections/test-credentials", {
        headers: { authorization: `Bearer ${admin}` },
        body: { name: "probe", db_type: "postgresql", database: database!.name, username: "root", ...fields }
      })
    // The store itself, by address or by name, even where loopback databases are allowed.
    for (const host of ["127.0.0.1", "localhost"]) {
      const store = await probe(gateway, { host, port: 5432 })
      expect(store.json, host).toMatchObject({ ok: false, step: "config" })
      expect(store.json.error).toContain("own store")
    }
    expect((await probe(gateway, { host: "127.0.0.1", port: relay.port })).json).toMatchObject({ ok: true })

    // Without SP_EGRESS_ALLOW_LOOPBACK: no loopback, link-local or metadata address, not even through a tunnel's first hop.
    const strict = await startGateway({ databaseUrl: database!.url, env: cloudEnv })
    try {
      for (const host of ["127.0.0.1", "localhost", "169.254.169.254", "::ffff:127.0.0.1", "::1"]) {
        const refused = await probe(strict, { host, port: relay.port })
        expect(refused.json, host).toMatchObject({ ok: false, step: "config" })
        expect(refused.json.error).toMatch(/does not connect to .*loopback, link-local and cloud metadata/)
      }
      const tunnelled = await probe(strict, { host: "db.internal", port: 5432, ssh_tunnel: { host: "127.0.0.1", username: "u", password: "pw-x" } })
      expect(tunnelled.json).toMatchObject({ ok: false, step: "config" })
      const created = await request(strict.url, "/api/connections", {
        headers: { authorization: `Bearer ${admin}` },
        body: { name: "inward", db_type: "postgresql", host: "127.0.0.1", port: relay.port, database: database!.name, username: "root" }
      })
      expect(created.status).toBe(201)
      const diagnosed = await request(strict.url, "/api/connections/inward/diagnose", { method: "POST", headers: { authorization: `Bearer ${admin}` } })
      expect(diagnosed.json.ok).toBe(false)
      expect(diagnosed.json.steps.at(-1)).toMatchObject({ status: "failed", detail: expect.stringContaining("does not connect to") })
    } finally {
      await strict.stop()
    }
  })

  it.skipIf(skip)("refuses bad session tokens with 401 unauthenticated and provisions nothing; honours the leeway", async () => {
    const cases: Array<[string, Promise<string>]> = [
      ["bad signature (same kid, other key pair)", token({ sub: "user_forged", orgId: "org_forged", admin: true, forged: true })],
      ["expired beyond the leeway", token({ sub: "user_expired", orgId: "org_expired", admin: true, exp: now() - 120 })],
      ["missing org_id", token({ sub: "user_no_org", admin: true })],
      ["non-string org_id", token({ sub: "user_numeric_org", orgId: 42, admin: true })],
      ["missing sub", token({ sub: null, orgId: "org_no_sub", admin: true })],
      ["missing exp", token({ sub: "user_no_exp", orgId: "org_no_exp", admin: true, exp: null })]
    ]
    for (const [name, pending] of cases) {
      const jwt = await pending
      for (const path of ["/api/plan", "/api/keys"]) {
        const res = await withJwt(path, jwt)
        expect(res.status, `${name} on ${path}: ${res.text}`).toBe(401)
        expect(res.json.code, name).toBe("unauthenticated")
      }
      const create = await createKey({ jwt }, { name: "should-not-exist", scopes: ["read"] })
      expect([create.status, create.json.code], name).toEqual([401, "unauthenticated"])
    }
    const none = await provisioned(
      ["org_forged", "org_expired", "org_no_sub", "org_no_exp", "42"],
      ["user_forged", "user_expired", "user_no_org", "user_numeric_org", "user_no_exp"]
    )
    expect(none).toEqual({ orgs: [], users: [], memberships: [] })
    expect((await database!.query("select id from api_keys where name = 'should-not-exist'")).length).toBe(0)

    // Expired 10 s ago is inside the 30 s leeway: accepted, and the first valid token provisions.
    const late = await token({ sub: "user_late", orgId: "org_late", exp: now() - 10 })
    const accepted = await withJwt("/api/plan", late)
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.json.deployment_mode).toBe("cloud")
    expect(await provisioned(["org_late"], ["user_late"])).toEqual({
      orgs: ["org_late"],
      users: ["user_late"],
      memberships: [{ org_id: "org_late", user_id: "user_late", role: "member" }]
    })

    // A member session has the member scopes, not admin.
    const member = await token({ sub: "user_member", orgId: "org_late" })
    const keys = await withJwt("/api/keys", member)
    expect(keys.status).toBe(403)
    expect(keys.json).toMatchObject({ code: "insufficient_scope", required_scope: "admin" })
    const settingsPut = await withJwt("/api/settings", member, { method: "PUT", body: { default_row_limit: 7 } })
    expect(settingsPut.json).toMatchObject({ code: "insufficient_scope", required_scope: "admin" })
    const plan = await withJwt("/api/plan", member)
    expect(plan.status).toBe(200)
    const audit = await withJwt("/api/audit", member)
    expect(audit.status).toBe(200)
  })

  it.skipIf(skip)("an admin key whose owner was demoted may no longer mint admin keys (403 forbidden), only lesser ones", async () => {
    const admin = await token({ sub: "user_dora", orgId: "org_d", admin: true })
    const created = await createKey({ jwt: admin }, { name: "dora-admin", scopes: ["admin", "read"] })
    expect(created.status, created.text).toBe(201)
    const adminKey = created.json.key as string
    const whileAdmin = await createKey({ key: adminKey }, { name: "minted-while-admin", scopes: ["admin"] })
    expect(whileAdmin.status, whileAdmin.text).toBe(201)

    const demoted = await token({ sub: "user_dora", orgId: "org_d" })
    const seen = await withJwt("/api/plan", demoted)
    expect(seen.status).toBe(200)
    const memberships = await database!.query("select role from memberships where org_id = 'org_d' and user_id = 'user_dora'")
    expect(memberships).toEqual([{ role: "member" }])

    const refused = await createKey({ key: adminKey }, { name: "minted-after-demotion", scopes: ["admin", "read"] })
    expect(refused.status, refused.text).toBe(403)
    expect(refused.json.code).toBe("forbidden")
    const lesser = await createKey({ key: adminKey }, { name: "reader-after-demotion", scopes: ["read"] })
    expect(lesser.status, lesser.text).toBe(201)
    expect(lesser.json.scopes).toEqual(["read"])
    const names = (await api("/api/keys", { key: adminKey })).json.items.map((k: { name: string }) => k.name).sort()
    expect(names).toEqual(["dora-admin", "minted-while-admin", "reader-after-demotion"])
  })

  it.skipIf(skip)("a demotion takes effect even when the user had a member session before being promoted", async () => {
    // member → admin → member again, all on one gateway process: each role change must reach the store.
    const member = () => token({ sub: "user_max", orgId: "org_m" })
    expect((await withJwt("/api/plan", await member())).status).toBe(200)
    const admin = await token({ sub: "user_max", orgId: "org_m", admin: true })
    const created = await createKey({ jwt: admin }, { name: "max-admin", scopes: ["admin", "read"] })
    expect(created.status, created.text).toBe(201)
    const adminKey = created.json.key as string

    expect((await withJwt("/api/plan", await member())).status).toBe(200)
    const refused = await createKey({ key: adminKey }, { name: "max-after-demotion", scopes: ["admin"] })
    expect([refused.status, refused.json.code], refused.text).toEqual([403, "forbidden"])
    const memberships = await database!.query("select role from memberships where org_id = 'org_m' and user_id = 'user_max'")
    expect(memberships).toEqual([{ role: "member" }])
  })

  it.skipIf(skip)("cloud mode has no local access: /local-api-key is 404 and no credential is 401 even from loopback", async () => {
    const local = await api("/local-api-key")
    expect([local.status, local.json?.code]).toEqual([404, "not_found"])
    for (const path of ["/api/plan", "/api/keys", "/api/audit", "/api/settings", "/api/security/status"]) {
      const res = await api(path)
      expect(res.status, path).toBe(401)
      expect(res.json.code, path).toBe("unauthenticated")
    }
    const admin = await token({ sub: "user_sam", orgId: "org_s", admin: true })
    const status = await withJwt("/api/security/status", admin)
    expect(status.status).toBe(200)
    expect(status.json).toMatchObject({ deployment_mode: "cloud", store: "postgresql", local_access: false, jwt_sessions: true })
    expect((await database!.query("select id from organizations where id = 'local'")).length).toBe(0)
  })
})
