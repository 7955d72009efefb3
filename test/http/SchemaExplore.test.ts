import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

describe("schema samples and exploration: governed queries, no side door", () => {
  let gateway: Gateway
  let admin: string
  let reader: string
  let querier: string
  let database: TestDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query(`create table customers (id int primary key, email text, ssn text, country text, spent numeric(10, 2), vip boolean);
      insert into customers select g, 'user' || g || '@example.com', '123-45-' || lpad(g::text, 4, '0'),
        case when g % 3 = 0 then 'FR' when g % 3 = 1 then 'DE' else 'O''Brien Isle' end, g * 1.5, g % 2 = 0 from generate_series(1, 30) g;
      update customers set country = null where id = 30;
      create table secrets (token text); insert into secrets values ('hunter2');`)
    gateway = await startApp({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" } })
    admin = await localKey(gateway)
    reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "reader", scopes: ["read"] } })).json.key
    querier = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "querier", scopes: ["query"] } })).json.key
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root", blocked_tables: ["secrets"] }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    const rules = { rules: [{ table: "customers", column: "email", action: "mask" }, { table: "customers", column: "ssn", action: "redact" }] }
    expect((await request(gateway.url, "/api/connections/pg/pii", { key: admin, method: "PUT", body: rules })).status).toBe(200)
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: querier, ...options })

  it.skipIf(skip)("row values need the query scope: a read key (metadata only) is refused on every route that returns them", async () => {
    const routes: Array<[string, RequestOptions]> = [
      ["/api/connections/pg/schema/samples?table=customers", {}],
      ["/api/connections/pg/schema/sample-values?table=customers", {}],
      ["/api/connections/pg/schema/explore", { body: { table: "customers", column: "country" } }],
      ["/api/connections/pg/schema/explore-columns", { body: { table: "customers" } }]
    ]
    for (const [route, options] of routes) {
      const refused = await request(gateway.url, route, { key: reader, ...options })
      expect([refused.status, refused.json.code, refused.json.required_scope], route).toEqual([403, "insufficient_scope", "query"])
      expect(refused.text).not.toContain("DE")
    }
    // The same key still reads the schema itself.
    expect((await request(gateway.url, "/api/connections/pg/schema", { key: reader })).status).toBe(200)
  })

  it.skipIf(skip)("samples and sample values come back masked, and each query is audited under the request", async () => {
    const samples = await api("/api/connections/pg/schema/samples?table=customers&limit=3")
    expect(samples.status, samples.text).toBe(200)
    expect(samples.json).toMatchObject({ table: "public.customers", row_count: 3 })
    expect(samples.json.columns.map((c: any) => c.name)).toEqual(["id", "email", "ssn", "country", "spent", "vip"])
    expect(samples.json.rows[0].slice(0, 3)).toEqual([1, "****.com", "[REDACTED]"])
    expect(samples.json.pii_masked).toEqual([
      { column: "email", rule: "mask" },
      { column: "ssn", rule: "redact" }
    ])

    const values = await api("/api/connections/pg/schema/sample-values?table=public.customers&limit=3")
    expect(values.status, values.text).toBe(200)
    const byName = Object.fromEntries(values.json.columns.map((c: any) => [c.name, c.values]))
    expect(byName["country"]).toEqual(["DE", "O'Brien Isle", "FR"])
    expect(byName["ssn"]).toEqual(["[REDACTED]"])
    expect(JSON.stringify(values.json)).not.toContain("@example.com")

    const audit = (await request(gateway.url, "/api/audit?limit=50", { key: admin })).json.items
    const parent = audit.find((r: any) => r.request_id === samples.headers["x-request-id"] && r.event_type === "schema_explore")
    expect(parent).toMatchObject({ connection: "pg", outcome: "success" })
    const child = audit.find((r: any) => r.request_id === samples.headers["x-request-id"] && r.event_type === "query")
    expect(child).toMatchObject({ sql: 'select * from "public"."customers"', rows: 3, details: { parent: { event_type: "schema_explore" }, pii_masked: samples.json.pii_masked } })
  })

  it.skipIf(skip)("explore counts rows, distinct values and NULLs, lists the top values, and filters with a safely quoted pattern", async () => {
    const res = await api("/api/connections/pg/schema/explore", { body: { table: "customers", column: "country", limit: 5 } })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toMatchObject({
      column: "country",
      statistics: { total_rows: 30, distinct_count: 3, null_count: 1, null_pct: 3.33 },
      filter: null
    })
    expect(res.json.values).toContainEqual({ value: "DE", count: 10 })
    const quoted = await api("/api/connections/pg/schema/explore", { body: { table: "customers", column: "country", filter_pattern: "O'Brien%" } })
    expect(quoted.json.values).toEqual([{ value: "O'Brien Isle", count: 10 }])
    // A pattern over a masked column would reveal it one guess at a time.
    const probe = await api("/api/connections/pg/schema/explore", { body: { table: "customers", column: "email", filter_pattern: "user1%" } })
    expect([probe.status, probe.json.code]).toEqual([400, "invalid_request"])
    expect(probe.json.message).toContain("PII rule")
    const masked = await api("/api/connections/pg/schema/explore", { body: { table: "customers", column: "ssn" } })
    expect(masked.json.values.every((v: any) => v.value === "[REDACTED]")).toBe(true)
  })

  it.skipIf(skip)("explore-columns gives each column's statistics and values, masked where a rule says", async () => {
    const res = await api("/api/connections/pg/schema/explore-columns", { body: { table: "customers", value_limit: 2 } })
    expect(res.status, res.text).toBe(200)
    expect(res.json.total_rows).toBe(30)
    const byName = Object.fromEntries(res.json.columns.map((c: any) => [c.name, c]))
    expect(byName["spent"]).toMatchObject({ type: "numeric(10,2)", pii: null, stats: { distinct_count: 30, null_count: 0, min: "1.50", max: "45.00" } })
    // Statistics are computed on the masked values: every email masks to ****.com.
    expect(byName["email"]).toMatchObject({ pii: "mask", stats: { distinct_count: 1 } })
    // An aggregate over a masked column is a derived value: redacted whole.
    expect(byName["email"].stats).toMatchObject({ min: "[REDACTED]", max: "[REDACTED]" })
    expect(byName["vip"].stats).toMatchObject({ distinct_count: 2, min: null, max: null })
    expect(byName["id"]).toMatchObject({ primary_key: true, values: [1, 2] })
    const some = await api("/api/connections/pg/schema/explore-columns", { body: { table: "customers", columns: ["country"], include_stats: false } })
    // Values as common ties in their own order (a table with PII rules is read in an order of its values, never its storage's).
    expect(some.json.columns).toEqual([expect.objectContaining({ name: "country", values: ["DE", "FR", "O'Brien Isle"] })])
    expect(some.json.total_rows).toBeNull()
  })

  it.skipIf(skip)("blocked tables, unknown tables and columns, and bad input are refused; budgets are charged", async () => {
    const blocked = await api("/api/connections/pg/schema/samples?table=secrets")
    expect([blocked.status, blocked.json.code]).toEqual([404, "not_found"])
    expect(blocked.text).not.toContain("hunter2")
    const column = await api("/api/connections/pg/schema/explore", { body: { table: "customers", column: "nope" } })
    expect([column.status, column.json.code]).toEqual([404, "not_found"])
    expect(column.json.message).toContain("its columns are id, email, ssn, country, spent, vip")
    for (const body of [{ table: "customers" }, { table: "customers", column: "id", limit: 101 }, { table: "customers", column: "id", extra: 1 }, { table: "customers", column: "id", filter_pattern: "x".repeat(201) }]) {
      const res = await api("/api/connections/pg/schema/explore", { body })
      expect([res.status, res.json.code], JSON.stringify(body)).toEqual([400, "invalid_request"])
    }
    expect((await api("/api/connections/pg/schema/samples?table=customers&limit=1000")).json.code).toBe("invalid_request")

    expect((await request(gateway.url, "/api/budget", { key: admin, body: { session: "explore-budget", max_queries: 2 } })).status).toBe(201)
    const first = await api("/api/connections/pg/schema/explore", { body: { table: "customers", column: "country", session: "explore-budget" } })
    expect(first.status, first.text).toBe(200)
    const spent = await api("/api/connections/pg/schema/samples?table=customers&session=explore-budget")
    expect(spent.json.code).toBe("budget_exhausted")
  })

  it.skipIf(skip)("explore-columns keeps each column's values under its own name when a dropped column leaves the sample", async () => {
    const put = (rules: unknown) => request(gateway.url, "/api/connections/pg/pii", { key: admin, method: "PUT", body: { rules } })
    expect((await put([{ table: "customers", column: "email", action: "drop" }])).status).toBe(200)
    try {
      const res = await api("/api/connections/pg/schema/explore-columns", { body: { table: "customers", value_limit: 3, include_stats: false } })
      const byName = Object.fromEntries(res.json.columns.map((c: any) => [c.name, c]))
      expect(byName["email"].values).toEqual([])
      expect(byName["country"].values).toEqual(["DE", "O'Brien Isle", "FR"])
    } finally {
      await put([{ table: "customers", column: "email", action: "mask" }, { table: "customers", column: "ssn", action: "redact" }])
    }
  })
})
