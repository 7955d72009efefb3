import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ClickhouseFake, startClickhouseFake } from "../fakes/ClickhouseFake"
import { FAKE_SCHEMA } from "../fakes/FakeCatalog"
import { startTrinoFake, type TrinoFake } from "../fakes/TrinoFake"
import { type Gateway, localKey } from "../support/Gateway"
import { request } from "../support/Http"
import { startApp } from "../support/InProcess"
import { expectNoKeys, scanThrough } from "../support/SchemaScans"

// Snowflake's and BigQuery's scans are in SnowflakeConnection and BigqueryConnection: their gateways
// trust the fakes' certificates through NODE_EXTRA_CA_CERTS, which only a process start reads.
describe("schema scans through the gateway, against the protocol fakes", () => {
  describe("trino", () => {
    let trino: TrinoFake
    let gateway: Gateway

    beforeAll(async () => {
      ;[trino, gateway] = await Promise.all([startTrinoFake(), startApp()])
    })
    afterAll(async () => {
      await gateway?.stop()
      await trino?.close()
    })

    it("reads information_schema in the connection's catalog into tables, views and columns", async () => {
      const { tables, compactLines } = await scanThrough(gateway, "trino", {
        db_type: "trino",
        host: "127.0.0.1",
        port: trino.port,
        username: "dave",
        catalog: "hive"
      })
      // Trino's connectors report no keys; its table comments come from system.metadata.
      expectNoKeys(tables)
      expect(tables["customers"].comment).toBe("People who buy")
      expect(tables["big_orders"].definition).toBe("SELECT id, total FROM shop.orders WHERE total > 100")
      expect(compactLines).toContain("shop.orders: id integer, customer_id integer, total decimal(12,2)")
      const reads = trino.statements.filter((s) => /information_schema\.(tables|columns)/.test(s.sql))
      expect(new Set(reads.map((s) => `${s.user}@${s.catalog}`))).toEqual(new Set(["dave@hive"]))

      // Without a catalog Trino has no information_schema to read: a clear refusal, and nothing is sent.
      const key = await localKey(gateway)
      const sent = trino.statements.length
      await request(gateway.url, "/api/connections", { key, body: { name: "nocatalog", db_type: "trino", host: "127.0.0.1", port: trino.port, username: "dave" } })
      const refused = await request(gateway.url, "/api/connections/nocatalog/schema/refresh", { key, method: "POST" })
      expect([refused.status, refused.json.code, refused.json.message]).toEqual([400, "invalid_request", "Set the connection's catalog so its schema can be scanned"])
      expect((await request(gateway.url, "/api/connections/nocatalog/schema", { key })).json.code).toBe("invalid_request")
      // With blocked tables, no relation of it can be traced without a scan: nothing is read, and the answer says what to set.
      const blocked = { name: "nocatalog_blocked", db_type: "trino", host: "127.0.0.1", port: trino.port, username: "dave", blocked_tables: ["shop.orders"] }
      expect((await request(gateway.url, "/api/connections", { key, body: blocked })).status).toBe(201)
      const query = await request(gateway.url, "/api/query", { key, body: { connection_name: "nocatalog_blocked", sql: "select * from shop.customers" } })
      expect([query.status, query.json.code]).toEqual([400, "query_blocked"])
      expect(query.json.message).toContain("Set the connection's catalog so its schema can be scanned")
      expect(trino.statements.length).toBe(sent)
    })
  })

  describe("clickhouse", () => {
    let clickhouse: ClickhouseFake
    let gateway: Gateway

    beforeAll(async () => {
      ;[clickhouse, gateway] = await Promise.all([startClickhouseFake({ databases: ["default", "system", FAKE_SCHEMA] }), startApp()])
    })
    afterAll(async () => {
      await gateway?.stop()
      await clickhouse?.close()
    })

    it("reads system.tables and system.columns: engines, sizes, sorting and primary keys, comments", async () => {
      const { tables, compactLines } = await scanThrough(gateway, "clickhouse", {
        db_type: "clickhouse",
        host: "127.0.0.1",
        port: clickhouse.port,
        database: FAKE_SCHEMA
      })
      expect(tables["customers"]).toMatchObject({
        engine: "MergeTree",
        row_estimate: 1200,
        size_bytes: 48_000,
        partition_key: null,
        sort_keys: ["id"],
        primary_key: ["id"]
      })
      expect(tables["orders"]).toMatchObject({
        engine: "MergeTree",
        row_estimate: 5400,
        size_bytes: 262_144,
        partition_key: "intDiv(id, 1000000)",
        sort_keys: ["customer_id", "id", "total"],
        primary_key: ["customer_id", "id"]
      })
      expect(tables["big_orders"]).toMatchObject({
        engine: "View",
        row_estimate: null,
        size_bytes: null,
        definition: "SELECT id, total FROM shop.orders WHERE total > 100",
        sort_keys: [],
        primary_key: []
      })
      expect(tables["customers"].columns).toMatchObject([
        { name: "id", primary_key: true, comment: null },
        { name: "email", type: "Nullable(String)", nullable: true, primary_key: false, comment: "Where receipts go" }
      ])
      expect(compactLines).toContain("shop.orders (5.4K rows): id Int32*, customer_id Int32*, total Decimal(12, 2)")
      const reads = clickhouse.queries.filter((q) => /system\.(tables|columns)/.test(q.query) && /currentDatabase/.test(q.query))
      expect(new Set(reads.map((q) => `${q.database} readonly=${q.settings["readonly"]}`))).toEqual(new Set([`${FAKE_SCHEMA} readonly=1`]))
    })
  })
})
