import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bigqueryCatalog } from "../../src/schema/catalog/Bigquery"
import { type BigqueryFake, startBigqueryFake } from "../fakes/BigqueryFake"
import { type ClickhouseFake, startClickhouseFake } from "../fakes/ClickhouseFake"
import { FAKE_SCHEMA, FAKE_TABLES, type FakeEngine, typeOf } from "../fakes/FakeCatalog"
import { makeCertificate, type SnowflakeFake, startSnowflakeFake } from "../fakes/SnowflakeFake"
import { startTrinoFake, type TrinoFake } from "../fakes/TrinoFake"
import { type Gateway, localKey, startGateway } from "../support/Gateway"
import { request } from "../support/Http"

const SNOWFLAKE_PASSWORD = "pw-snow-schema-5d1f07"
const BIGQUERY_PROJECT = "sluice-schema"

// A Snowflake connection has no port: the gateway dials host:443, so the fake listens there on a loopback
// address of its own; binding 443 needs root or a lowered net.ipv4.ip_unprivileged_port_start.
const snowflakeOn443 = async () => {
  for (let attempt = 0; attempt < 5; attempt++) {
    const ip = `127.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${2 + Math.floor(Math.random() * 250)}`
    const certificate = makeCertificate([ip])
    try {
      return { certificate, fake: await startSnowflakeFake({ certificate, users: { ALICE: SNOWFLAKE_PASSWORD }, host: ip, port: 443 }) }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EACCES") return null
      if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error
    }
  }
  return null
}
const snowflakeStarted = await snowflakeOn443()
if (snowflakeStarted === null && process.env["CI"] === "true") throw new Error("cannot listen on port 443 for the Snowflake fake")
if (snowflakeStarted === null) console.warn("skipping the Snowflake schema scan: this user cannot listen on port 443")

/**
 * Creates the connection, reads its schema through the gateway and checks the fake's canned catalog came
 * back: tables with their kinds, and columns with names, types and nullability. Returns the tables by
 * name and the compact lines.
 */
const scanThrough = async (gateway: Gateway, engine: FakeEngine, connection: Record<string, unknown>) => {
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
const expectKeysAndFacts = (tables: Record<string, any>, engine: "snowflake" | "bigquery") => {
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
const expectNoKeys = (tables: Record<string, any>) => {
  for (const table of Object.values(tables)) {
    expect(table.primary_key).toEqual([])
    expect(table.columns.every((c: any) => c.primary_key === false)).toBe(true)
  }
}

describe("schema scans through the gateway, against the protocol fakes", () => {
  describe("trino", () => {
    let trino: TrinoFake
    let gateway: Gateway

    beforeAll(async () => {
      ;[trino, gateway] = await Promise.all([startTrinoFake(), startGateway()])
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
      expect(trino.statements.length).toBe(sent)
    })
  })

  describe("clickhouse", () => {
    let clickhouse: ClickhouseFake
    let gateway: Gateway

    beforeAll(async () => {
      ;[clickhouse, gateway] = await Promise.all([startClickhouseFake({ databases: ["default", "system", FAKE_SCHEMA] }), startGateway()])
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

  describe.skipIf(snowflakeStarted === null)("snowflake", () => {
    const snowflake = snowflakeStarted?.fake as SnowflakeFake
    let gateway: Gateway

    beforeAll(async () => {
      gateway = await startGateway({ env: { NODE_EXTRA_CA_CERTS: snowflakeStarted!.certificate.certPath } })
    })
    afterAll(async () => {
      await gateway?.stop()
      await snowflake?.close()
    })

    it("reads the database's information_schema and SHOW … KEYS over the REST API: keys in key order, clustering, comments, rows", async () => {
      const { tables, compactLines } = await scanThrough(gateway, "snowflake", {
        db_type: "snowflake",
        account: "acme",
        host: snowflake.host,
        username: "ALICE",
        password: SNOWFLAKE_PASSWORD,
        warehouse: "WH",
        database: "DB"
      })
      expectKeysAndFacts(tables, "snowflake")
      expect(compactLines).toContain("shop.orders (5.4K rows): id NUMBER*, customer_id NUMBER*→customers.id, total NUMBER")
    })
  })

  describe("bigquery", () => {
    let bigquery: BigqueryFake
    let gateway: Gateway

    beforeAll(async () => {
      bigquery = await startBigqueryFake(BIGQUERY_PROJECT)
      // The scan reads the dataset's INFORMATION_SCHEMA, qualified by project and dataset.
      bigquery.defineCatalog(bigqueryCatalog(BIGQUERY_PROJECT, FAKE_SCHEMA))
      gateway = await startGateway({ env: { NODE_EXTRA_CA_CERTS: bigquery.caPath } })
    })
    afterAll(async () => {
      await gateway?.stop()
      await bigquery?.close()
    })

    it("reads the dataset's INFORMATION_SCHEMA and __TABLES__ as dry-run-checked jobs: keys, partitioning, clustering, descriptions, rows", async () => {
      const { tables, compactLines } = await scanThrough(gateway, "bigquery", {
        db_type: "bigquery",
        project: BIGQUERY_PROJECT,
        dataset: FAKE_SCHEMA,
        credentials_json: bigquery.serviceAccount().json,
        api_endpoint: bigquery.url,
        location: "US"
      })
      expectKeysAndFacts(tables, "bigquery")
      expect(compactLines).toContain("shop.orders (5.4K rows): id INT64*, customer_id INT64*→customers.id, total NUMERIC")
      // Both reads went through a dry run and then a job.
      for (const view of ["tables", "columns"]) {
        const read = new RegExp(`information_schema\\.${view}`, "i")
        expect(bigquery.dryRuns.some((d) => read.test(d.sql))).toBe(true)
        expect([...bigquery.jobs.values()].some((j) => read.test(j.sql))).toBe(true)
      }
    })
  })
})
