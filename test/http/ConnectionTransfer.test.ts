import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const PASSWORD = "transfer-pw-9c1e"

describe("connection export and import, and network info", () => {
  let source: Gateway
  let target: Gateway
  let database: TestDatabase
  const keys = { admin: "", writer: "", reader: "", targetAdmin: "" }

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    ;[source, target] = await Promise.all([startApp(), startApp()])
    keys.admin = await localKey(source)
    keys.targetAdmin = await localKey(target)
    const make = async (name: string, scopes: Array<string>) =>
      (await request(source.url, "/api/keys", { key: keys.admin, body: { name, scopes } })).json.key
    keys.writer = await make("writer", ["read", "write"])
    keys.reader = await make("reader", ["read"])
    const pg = (name: string) => ({ name, db_type: "postgresql", host: "127.0.0.1", database: database.name, username: "root", password: PASSWORD, tags: ["t"] })
    for (const body of [pg("alpha"), pg("beta")]) expect((await request(source.url, "/api/connections", { key: keys.admin, body })).status).toBe(201)
    const rules = { rules: [{ table: "customers", column: "email", action: "mask" }] }
    expect((await request(source.url, "/api/connections/alpha/pii", { key: keys.admin, method: "PUT", body: rules })).status).toBe(200)
  })
  afterAll(async () => {
    await Promise.all([source?.stop(), target?.stop()])
    await database?.drop()
  })

  const on = (gateway: Gateway, key: string) => (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key, ...options })

  it.skipIf(skip)("exports without secrets by default; secrets only for an admin who confirms, marked in the audit log", async () => {
    const plain = await on(source, keys.writer)("/api/connections/export", { body: {} })
    expect(plain.status).toBe(200)
    expect(plain.json).toMatchObject({
      format: "sluice.connections.v1",
      include_secrets: false,
      pii_rules: { alpha: [{ table: "customers", column: "email", action: "mask" }] }
    })
    expect(plain.json.connections.map((c: { name: string }) => c.name)).toEqual(["alpha", "beta"])
    expect(plain.json.connections[0]).toEqual({ name: "alpha", db_type: "postgresql", host: "127.0.0.1", database: database.name, username: "root", tags: ["t"] })
    expect(plain.text).not.toContain(PASSWORD)

    const notAdmin = await on(source, keys.writer)("/api/connections/export", { body: { include_secrets: true, confirm: true } })
    expect(notAdmin.status).toBe(403)
    const unconfirmed = await on(source, keys.admin)("/api/connections/export", { body: { include_secrets: true } })
    expect(unconfirmed.status).toBe(400)
    expect(unconfirmed.json.message).toContain("confirm")
    expect((await on(source, keys.reader)("/api/connections/export", { body: {} })).status).toBe(403)
    expect((await on(source, keys.admin)("/api/connections/export", { body: { names: ["nope"] } })).status).toBe(404)

    const full = await on(source, keys.admin)("/api/connections/export", { body: { names: ["beta"], include_secrets: true, confirm: true } })
    expect(full.status).toBe(200)
    expect(full.json.connections).toEqual([expect.objectContaining({ name: "beta", password: PASSWORD })])

    const audit = await on(source, keys.admin)("/api/audit?event_type=connections_export_secrets")
    expect(audit.json.items).toHaveLength(1)
    expect(audit.json.items[0]).toMatchObject({ route: "/api/connections/export", status: 200 })
    expect(audit.text).not.toContain(PASSWORD)
    expect(source.logs()).not.toContain(PASSWORD)
  })

  it.skipIf(skip)("imports into another gateway; a conflict fails the whole import unless skip or replace is asked", async () => {
    const exported = (await on(source, keys.admin)("/api/connections/export", { body: { include_secrets: true, confirm: true } })).json
    const importer = on(target, keys.targetAdmin)
    const created = await importer("/api/connections/import", { body: exported })
    expect(created.json).toEqual({ created: ["alpha", "beta"], replaced: [], skipped: [] })
    expect((await importer("/api/connections/alpha")).json).toMatchObject({ password_set: true, tags: ["t"] })
    // The masking travels with the connection.
    expect((await importer("/api/connections/alpha/pii")).json).toEqual({ rules: exported.pii_rules.alpha, version: 1 })
    expect((await importer("/api/connections/beta/pii")).json).toEqual({ rules: [], version: 0 })
    const stray = await importer("/api/connections/import", { body: { connections: [], pii_rules: { zeta: [] } } })
    expect([stray.status, stray.json.message]).toEqual([400, 'pii_rules: "zeta" is not among the imported connections'])
    expect((await importer("/api/connections/alpha/test", { method: "POST" })).json).toMatchObject({ ok: true })

    const gamma = { name: "gamma", db_type: "sqlite", database: "gamma.sqlite" }
    const conflict = await importer("/api/connections/import", { body: { connections: [gamma, ...exported.connections] } })
    expect(conflict.status).toBe(409)
    expect((await importer("/api/connections/gamma")).status).toBe(404)
    const skipped = await importer("/api/connections/import", { body: { connections: [gamma, ...exported.connections], on_conflict: "skip" } })
    expect(skipped.json).toEqual({ created: ["gamma"], replaced: [], skipped: ["alpha", "beta"] })
    const edited = { ...exported.connections[0], description: "replaced" }
    const replaced = await importer("/api/connections/import", { body: { connections: [edited], on_conflict: "replace" } })
    expect(replaced.json).toEqual({ created: [], replaced: ["alpha"], skipped: [] })
    expect((await importer("/api/connections/alpha")).json).toMatchObject({ description: "replaced", password_set: true })
  })

  it.skipIf(skip)("a bad import changes nothing and says which entry is wrong", async () => {
    const importer = on(target, keys.targetAdmin)
    const before = (await importer("/api/connections")).json.items.length
    const twice = await importer("/api/connections/import", {
      body: { connections: [{ name: "d1", db_type: "sqlite", database: "a.db" }, { name: "d1", db_type: "sqlite", database: "b.db" }] }
    })
    expect(twice.status).toBe(400)
    expect(twice.json.message).toContain("appears twice")
    const invalid = await importer("/api/connections/import", {
      body: { connections: [{ name: "ok1", db_type: "sqlite", database: "a.db" }, { name: "bad", db_type: "postgresql", database: "x", username: "u" }] }
    })
    expect(invalid.status).toBe(400)
    expect(invalid.json.message).toMatch(/connections\.1.*host/)
    const outside = await importer("/api/connections/import", {
      body: { connections: [{ name: "ok2", db_type: "sqlite", database: "a.db" }, { name: "escape", db_type: "sqlite", database: "/etc/passwd" }] }
    })
    expect(outside.status).toBe(400)
    expect((await importer("/api/connections")).json.items.length).toBe(before)
  })

  it.skipIf(skip)("network info lists the egress addresses for admins only", async () => {
    const info = await on(source, keys.admin)("/api/network/info")
    expect(info.status).toBe(200)
    expect(info.json).toMatchObject({ hostname: expect.any(String), egress_ips_source: "interfaces" })
    expect(Array.isArray(info.json.egress_ips)).toBe(true)
    expect((await on(source, keys.writer)("/api/network/info")).status).toBe(403)
  })
})
