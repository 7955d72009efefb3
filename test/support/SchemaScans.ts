import { expect } from "vitest"
import { FAKE_SCHEMA, FAKE_TABLES, type FakeEngine, typeOf } from "../fakes/FakeCatalog"
import { type Gateway, localKey } from "./Gateway"
import { request } from "./Http"

/**
 * Creates the connection, reads its schema through the gateway and checks the fake's canned catalog came
 * back: tables with their kinds, and columns with names, types and nullability. Returns the tables by
 * name and the compact lines.
 */
export const scanThrough = async (gateway: Gateway, engine: FakeEngine, connection: Record<string, unknown>) => {
  const key = await localKey(gateway)
  const created = await request(gateway.url, "/api/connections", { key, body: { name: "shop", ...connection } })
  expect(created.status, created.text).toBe(201)
  const schema = await request(gateway.url, "/api/connections/shop/schema", { key })
  expect(schema.status, schema.text).toBe(200)
  const tables: Array<any> = schema.json.tables
  expect(tables.map((t) => `${t.schema}.${t.name}:${t.kind}`).sort()).toEqual(FAKE_TABLES.map((t) => `${FAKE_SCHEMA}.${t.name}:${t.kind}`))
  const byName = Object.fromEntries(tables.map((t) => [t.name, t]))
  for (const table of FAKE_TABLES) {
    expect(byName[table.name].columns.map((c: any) => [c.name, c.type, c.nullable])).toEqual(
      table.columns.map((c) => [c.name, typeOf(engine, c), c.nullable])
    )
  }
  const compact = await request(gateway.url, "/api/connections/shop/schema/compact", { key })
  expect(compact.status, compact.text).toBe(200)
  return { tables: byName, compactLines: (compact.json.text as string).split("\n") }
}

/** The keys, comments, statistics and view definition of FakeCatalog.ts, as Snowflake's and BigQuery's catalogs report them. */
export const expectKeysAndFacts = (tables: Record<string, any>, engine: "snowflake" | "bigquery") => {
  expect(tables["customers"]).toMatchObject({
    comment: "People who buy",
    primary_key: ["id"],
    unique_keys: engine === "snowflake" ? [["email"]] : [],
    row_estimate: 1200,
    size_bytes: 48_000
  })
  expect(tables["customers"].columns.find((c: any) => c.name === "email")).toMatchObject({ comment: "Where receipts go", primary_key: false })
  expect(tables["orders"]).toMatchObject({
    primary_key: ["customer_id", "id"],
    foreign_keys: [{ name: "orders_customer", columns: ["customer_id"], references: { schema: FAKE_SCHEMA, table: "customers", columns: ["id"] } }],
    cluster_keys: ["customer_id", "round(total, 0)"],
    partition_key: engine === "bigquery" ? "id" : null,
    row_estimate: 5400,
    size_bytes: 262_144
  })
  expect(tables["big_orders"]).toMatchObject({ definition: "SELECT id, total FROM shop.orders WHERE total > 100", primary_key: [] })
}

/** Where a catalog reports no keys, no table or column has one. */
export const expectNoKeys = (tables: Record<string, any>) => {
  for (const table of Object.values(tables)) {
    expect(table.primary_key).toEqual([])
    expect(table.columns.every((c: any) => c.primary_key === false)).toBe(true)
  }
}

