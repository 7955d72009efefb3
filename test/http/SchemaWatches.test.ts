import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

describe("schema watches: record when what they watch changes", () => {
  let gateway: Gateway
  let admin: string
  let reader: string
  let database: TestDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table orders (id int primary key, total numeric); create table order_lines (order_id int, sku text); create table audit_trail (id int)")
    gateway = await startApp()
    admin = await localKey(gateway)
    reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "reader", scopes: ["read"] } })).json.key
    const connection = { name: "db", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root", blocked_tables: ["audit_trail"] }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: admin, ...options })

  it.skipIf(skip)("a run records the changes since the last run that touch the watched tables, and nothing else", async () => {
    expect((await api("/api/schema-watches", { key: reader, body: { connection: "db" } })).status).toBe(403)
    const orders = await api("/api/schema-watches", { body: { connection: "db", tables: ["public.order*"], interval_seconds: 600 } })
    expect(orders.status, orders.text).toBe(201)
    expect(orders.json).toMatchObject({ connection: "db", name: "db: public.order*", tables: ["public.order*"], interval_seconds: 600, enabled: true, last_version: null })
    const everything = (await api("/api/schema-watches", { body: { connection: "db", name: "all of db" } })).json

    // The first run only takes the baseline.
    const baseline = await api(`/api/schema-watches/${orders.json.id}/run`, { method: "POST" })
    expect(baseline.status, baseline.text).toBe(200)
    expect(baseline.json).toMatchObject({ watch: { last_version: 1, last_error: null }, new_events: [] })
    expect((await api(`/api/schema-watches/${everything.id}/run`, { method: "POST" })).json.new_events).toEqual([])

    await database.query("alter table orders add column status text; create table invoices (id int); alter table audit_trail add column who text")
    const ran = await api(`/api/schema-watches/${orders.json.id}/run`, { method: "POST" })
    expect(ran.json.watch.last_version).toBe(2)
    expect(ran.json.new_events).toEqual([
      expect.objectContaining({
        from_version: 1,
        to_version: 2,
        diff: {
          added_tables: [],
          removed_tables: [],
          changed_tables: [
            { table: "public.orders", added_columns: [{ name: "status", type: "text" }], removed_columns: [], retyped_columns: [], nullability_changed: [], keys_changed: false }
          ]
        }
      })
    ])
    // The whole-connection watch sees the new table too; a blocked table's change is seen by neither.
    const all = await api(`/api/schema-watches/${everything.id}/run`, { method: "POST" })
    expect(all.json.new_events[0].diff.added_tables).toEqual(["public.invoices"])
    expect(JSON.stringify(all.json)).not.toContain("audit_trail")
    expect((await api(`/api/schema-watches/${orders.json.id}/run`, { method: "POST" })).json.new_events).toEqual([])

    const got = await api(`/api/schema-watches/${orders.json.id}`, { key: reader })
    expect(got.json.events).toHaveLength(1)
    expect((await api("/api/schema-watches", { key: reader })).json.items.map((w: any) => w.name)).toEqual(["db: public.order*", "all of db"])
  })

  it.skipIf(skip)("refusals: unknown connection or watch, bad input; a deleted watch is gone", async () => {
    expect((await api("/api/schema-watches", { body: { connection: "nope" } })).status).toBe(404)
    for (const body of [{ connection: "db", interval_seconds: 5 }, { connection: "db", extra: 1 }, { connection: "db", tables: "orders" }]) {
      const res = await api("/api/schema-watches", { body })
      expect([res.status, res.json.code], JSON.stringify(body)).toEqual([400, "invalid_request"])
    }
    expect((await api("/api/schema-watches/watch_nope")).status).toBe(404)
    expect((await api("/api/schema-watches/watch_nope/run", { method: "POST" })).status).toBe(404)
    const created = (await api("/api/schema-watches", { body: { connection: "db" } })).json
    expect((await api(`/api/schema-watches/${created.id}`, { method: "DELETE", key: reader })).status).toBe(403)
    expect((await api(`/api/schema-watches/${created.id}`, { method: "DELETE" })).status).toBe(204)
    expect((await api(`/api/schema-watches/${created.id}`)).status).toBe(404)
  })
})
