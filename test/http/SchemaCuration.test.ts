import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { SHOP_SCHEMA_SQL } from "../support/SchemaFixtures"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

describe("schema curation: endorsements, descriptions, type fixes and the semantic model", () => {
  let gateway: Gateway
  let admin: string
  let reader: string
  let database: TestDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query(SHOP_SCHEMA_SQL)
    gateway = await startApp()
    admin = await localKey(gateway)
    reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "reader", scopes: ["read"] } })).json.key
    const connection = { name: "shop", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    expect((await request(gateway.url, "/api/connections/shop/pii", { key: admin, method: "PUT", body: { rules: [{ table: "sales.customers", column: "email", action: "mask" }] } })).status).toBe(200)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: admin, ...options })
  const tableOf = (body: { tables: Array<{ table: string }> }, name: string) => body.tables.find((t) => t.table === name) as any

  it.skipIf(skip)("generated descriptions fill what neither the database nor a person describes, and never replace them", async () => {
    const before = (await api("/api/connections/shop/annotations", { key: reader })).json
    expect(tableOf(before, "sales.customers")).toMatchObject({ description: "People and companies who buy from the shop", source: "comment" })
    expect(tableOf(before, "sales.orders")).toMatchObject({ description: null, source: null })

    const refined = await api("/api/connections/shop/schema/refine", {
      body: { table: "orders", description: "One row per checkout", columns: [{ name: "status", description: "new, paid, shipped or cancelled" }] }
    })
    expect(refined.status, refined.text).toBe(200)
    expect(refined.json.tables).toEqual([expect.objectContaining({ table: "sales.orders", description: "One row per checkout", source: "manual" })])

    const generated = await api("/api/connections/shop/annotations/generate", { method: "POST" })
    expect(generated.status, generated.text).toBe(200)
    expect(generated.json.generated).toBeGreaterThan(100)
    const orders = tableOf(generated.json, "sales.orders")
    expect(orders).toMatchObject({ description: "One row per checkout", source: "manual" })
    const column = (name: string) => orders.columns.find((c: any) => c.name === name)
    expect(column("id")).toEqual({ name: "id", description: "Unique identifier of the order", source: "generated" })
    expect(column("customer_id").description).toBe("The customer this order refers to (→ sales.customers.id)")
    expect(column("ordered_at").description).toBe("When the order was ordered")
    expect(column("status")).toMatchObject({ description: "new, paid, shipped or cancelled", source: "manual" })
    expect(tableOf(generated.json, "sales.customers").columns.find((c: any) => c.name === "email")).toMatchObject({ source: "comment" })
    expect(tableOf(generated.json, "analytics.events").columns.find((c: any) => c.name === "customer_id").description).toBe(
      "The customer this event refers to (likely → sales.customers.id)"
    )
    expect(tableOf(generated.json, "hr.salaries").description).toBe("A table of salary records, one per row; each linked to hr.employees")

    // Descriptions show in every form of the schema.
    const ddl = (await api("/api/connections/shop/schema/ddl?max_tables=100", { key: reader })).json.text
    expect(ddl).toContain("-- sales.orders | One row per checkout")
    expect(ddl).toContain("  status text DEFAULT 'new'::text NOT NULL, -- new, paid, shipped or cancelled")
    expect(ddl).toContain("  manager_id integer, -- The manager of this employee (→ hr.employees.id)")
    expect(ddl).toContain("  quantity integer NOT NULL, -- Quantity of the order item")
    const again = await api("/api/connections/shop/annotations/generate", { method: "POST" })
    expect(again.json.generated).toBe(generated.json.generated)
  })

  it.skipIf(skip)("types corrected by hand show everywhere but are not schema changes; null restores the scanned type", async () => {
    const fixed = await api("/api/connections/shop/schema/correct-columns", { body: { table: "sales.payments", columns: [{ name: "paid_at", type: "timestamptz (UTC)" }] } })
    expect(fixed.status, fixed.text).toBe(200)
    expect(fixed.json.columns.find((c: any) => c.name === "paid_at").type).toBe("timestamptz (UTC)")
    const compact = (await api("/api/connections/shop/schema/compact?max_tables=100", { key: reader })).json.text
    expect(compact).toContain("paid_at timestamptz (UTC)")
    expect((await api("/api/connections/shop/schema/diff", { key: reader })).json.changed).toBe(false)
    const restored = await api("/api/connections/shop/schema/correct-columns", { body: { table: "payments", columns: [{ name: "paid_at", type: null }] } })
    expect(restored.json.columns.find((c: any) => c.name === "paid_at").type).toBe("timestamp with time zone")
    const unknown = await api("/api/connections/shop/schema/correct-columns", { body: { table: "payments", columns: [{ name: "nope", type: "int" }] } })
    expect([unknown.status, unknown.json.code]).toEqual([404, "not_found"])
    expect((await api("/api/connections/shop/schema/correct-columns", { body: { table: "payments", columns: [] } })).json.code).toBe("invalid_request")
  })

  it.skipIf(skip)("endorsements replace as a set, feed search, and show in the enriched schema with PII rules", async () => {
    const body = {
      endorsements: [
        { table: "sales.orders", status: "trusted", note: "finance-approved revenue source" },
        { table: "hr.salaries", column: "amount", status: "deprecated", note: "use payroll exports" }
      ]
    }
    expect((await api("/api/connections/shop/schema/endorsements", { key: reader, method: "PUT", body })).status).toBe(403)
    const put = await api("/api/connections/shop/schema/endorsements", { method: "PUT", body })
    expect(put.status, put.text).toBe(200)
    expect(put.json.endorsements.map((e: any) => [e.table, e.column, e.status])).toEqual([
      ["hr.salaries", "amount", "deprecated"],
      ["sales.orders", null, "trusted"]
    ])
    const search = await api("/api/connections/shop/schema/search?q=finance%20approved", { key: reader })
    expect(search.json.tables[0].table).toBe("sales.orders")

    const enriched = await api("/api/connections/shop/schema/enriched", { key: reader })
    expect(enriched.status, enriched.text).toBe(200)
    const orders = enriched.json.tables.find((t: any) => t.name === "orders")
    expect(orders).toMatchObject({ endorsement: "trusted", endorsement_note: "finance-approved revenue source", description_source: "manual", comment: "One row per checkout" })
    const customers = enriched.json.tables.find((t: any) => t.name === "customers")
    expect(customers.columns.find((c: any) => c.name === "email")).toMatchObject({ pii: "mask", description_source: "comment", endorsement: null })

    // A set naming an unknown table is refused whole: nothing changes.
    const bad = await api("/api/connections/shop/schema/endorsements", { method: "PUT", body: { endorsements: [{ table: "nope", status: "trusted" }] } })
    expect([bad.status, bad.json.code]).toEqual([404, "not_found"])
    expect((await api("/api/connections/shop/schema/endorsements", { key: reader })).json.endorsements).toHaveLength(2)
    expect((await api("/api/connections/shop/schema/endorsements", { method: "PUT", body: { endorsements: [{ table: "orders", status: "great" }] } })).json.code).toBe("invalid_request")
    expect((await api("/api/connections/shop/schema/endorsements", { method: "PUT", body: { endorsements: [] } })).json.endorsements).toEqual([])
  })

  it.skipIf(skip)("the semantic model is drafted from keys and columns, checked against the schema when saved, and versioned", async () => {
    const none = await api("/api/connections/shop/semantic-model", { key: reader })
    expect([none.status, none.json.code]).toEqual([404, "not_found"])
    const drafted = await api("/api/connections/shop/semantic-model/generate", { method: "POST" })
    expect(drafted.status, drafted.text).toBe(200)
    expect(drafted.json).toMatchObject({ connection: "shop", version: 1, source: "generated" })
    const orders = drafted.json.semantic_models.find((m: any) => m.model === "sales.orders")
    expect(orders).toMatchObject({
      name: "orders",
      description: "One row per checkout",
      entities: [
        { name: "order", type: "primary", expr: "id" },
        { name: "customer", type: "foreign", expr: "customer_id" }
      ],
      measures: [
        { name: "orders_count", agg: "count", expr: "id" },
        { name: "total_total", agg: "sum", expr: "total" }
      ]
    })
    expect(orders.dimensions).toEqual([
      { name: "status", type: "categorical", expr: "status" },
      { name: "ordered_at", type: "time", expr: "ordered_at", time_granularity: "day" }
    ])
    const employees = drafted.json.semantic_models.find((m: any) => m.model === "hr.employees")
    expect(employees.entities.map((e: any) => e.name)).toEqual(["employee", "department", "manager"])

    const mine = { semantic_models: [{ name: "revenue", model: "sales.orders", entities: [{ name: "order", type: "primary", expr: "id" }], dimensions: [], measures: [{ name: "revenue", agg: "sum", expr: "total" }] }] }
    const saved = await api("/api/connections/shop/semantic-model", { method: "PUT", body: mine })
    expect(saved.status, saved.text).toBe(200)
    expect(saved.json).toMatchObject({ version: 2, source: "manual", semantic_models: mine.semantic_models })
    expect((await api("/api/connections/shop/semantic-model", { key: reader })).json).toMatchObject({ version: 2 })

    const wrong = { semantic_models: [{ ...mine.semantic_models[0], measures: [{ name: "revenue", agg: "sum", expr: "totl" }] }] }
    const refused = await api("/api/connections/shop/semantic-model", { method: "PUT", body: wrong })
    expect([refused.status, refused.json.code]).toEqual([400, "invalid_request"])
    expect(refused.json.message).toContain("revenue.revenue: no column totl in sales.orders")
    expect((await api("/api/connections/shop/semantic-model", { method: "PUT", body: { ...mine, extra: true } })).json.code).toBe("invalid_request")
    expect((await api("/api/connections/shop/semantic-model", { key: reader })).json.version).toBe(2)
  })
})
