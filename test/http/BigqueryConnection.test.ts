import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BigqueryConnector } from "../../layers/connectors/Bigquery"
import { bigqueryCatalog } from "../../src/schema/catalog/Bigquery"
import { type BigqueryFake, type ServiceAccount, startBigqueryFake } from "../fakes/BigqueryFake"
import { type Gateway, localKey, startGateway } from "../support/Gateway"
import { FAKE_SCHEMA } from "../fakes/FakeCatalog"
import { request, type RequestOptions } from "../support/Http"
import { expectKeysAndFacts, scanThrough } from "../support/SchemaScans"

const PROJECT = "sluice-http"

describe("a bigquery connection over HTTP, against the protocol fake", () => {
  let fake: BigqueryFake
  let gateway: Gateway
  let admin: string
  let account: ServiceAccount

  beforeAll(async () => {
    fake = await startBigqueryFake(PROJECT)
    fake.define("select 1", { statementType: "SELECT", fields: [{ name: "f0_", type: "INTEGER" }], rows: [["1"]] })
    // As the governed executor sends it: row-capped to row_limit + 1.
    fake.define("select region, amount from sales.orders limit 11", {
      statementType: "SELECT",
      totalBytesProcessed: 40_000,
      fields: [
        { name: "region", type: "STRING" },
        { name: "amount", type: "INTEGER" }
      ],
      rows: [
        ["EU", "5"],
        ["US", "7"]
      ]
    })
    fake.define(BigqueryConnector.privilegesProbe, { statementType: "SELECT", fields: [{ name: "readable_tables", type: "INTEGER" }], rows: [["3"]] })
    // A schema scan reads the dataset's INFORMATION_SCHEMA, qualified by project and dataset.
    fake.defineCatalog(bigqueryCatalog(PROJECT, FAKE_SCHEMA))
    account = fake.serviceAccount()
    // The gateway trusts the fake's certificate as it would a real one: through the CA store it starts with.
    gateway = await startGateway({ env: { NODE_EXTRA_CA_CERTS: fake.caPath, SP_RATE_LIMIT_EXPENSIVE_RPM: "10000" } })
    admin = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
    await fake?.close()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: admin, ...options })
  const connection = (name: string, credentials_json: string) => ({
    name,
    db_type: "bigquery",
    project: PROJECT,
    dataset: "sales",
    credentials_json,
    api_endpoint: fake.url,
    location: "US",
    maximum_bytes_billed: 10_000_000
  })

  it("tests and diagnoses a working connection; a refused key is step auth with no secret in the answer", async () => {
    const created = await api("/api/connections", { body: connection("warehouse", account.json) })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ db_type: "bigquery", credentials_json_set: true, api_endpoint: fake.url })
    expect(created.text).not.toContain("PRIVATE KEY")

    const tested = await api("/api/connections/warehouse/test", { method: "POST" })
    expect(tested.json).toMatchObject({ ok: true })
    expect(tested.json.latency_ms).toBeGreaterThan(0)

    const diagnosed = await api("/api/connections/warehouse/diagnose", { method: "POST" })
    expect(diagnosed.json.ok).toBe(true)
    const steps = Object.fromEntries(diagnosed.json.steps.map((s: { step: string; status: string }) => [s.step, s.status]))
    expect(steps).toMatchObject({ dns: "ok", tcp: "ok", auth: "ok", privileges: "ok" })
    expect(diagnosed.json.steps.at(-1).detail).toMatch(/^3 readable tables/)

    const stranger = fake.serviceAccount({ registered: false })
    await api("/api/connections", { body: connection("stranger", stranger.json) })
    const refused = await api("/api/connections/stranger/test", { method: "POST" })
    expect(refused.json).toMatchObject({ ok: false, step: "auth" })
    const refusedDiagnosis = await api("/api/connections/stranger/diagnose", { method: "POST" })
    expect(refusedDiagnosis.json.ok).toBe(false)
    expect(refusedDiagnosis.json.steps.at(-1)).toMatchObject({ step: "auth", status: "failed" })
    for (const text of [refused.text, refusedDiagnosis.text, gateway.logs()]) {
      expect(text).not.toContain("PRIVATE KEY")
      expect(text).not.toContain(stranger.privateKey.split("\n")[1]!)
    }
    // Only the fake was dialled: the gateway got its tokens from the key's token_uri.
    expect(fake.requests.filter((r) => r === "POST /token").length).toBeGreaterThan(0)
  })

  it("governed queries report the bytes BigQuery processed, charge them to a budget, and explain by dry run", async () => {
    expect((await api("/api/connections", { body: connection("billed", account.json) })).status).toBe(201)
    const budget = await api("/api/budget", { body: { session: "bq", max_bytes_scanned: 100_000 } })
    expect(budget.status).toBe(201)
    const sql = "select region, amount from sales.orders"
    const first = await api("/api/query", { body: { connection_name: "billed", sql, row_limit: 10, session: "bq" } })
    expect(first.status).toBe(200)
    expect(first.json).toMatchObject({ rows: [["EU", 5], ["US", 7]], bytes_scanned: 40_000, budget: { remaining: { bytes_scanned: 60_000 } } })

    const explained = await api("/api/query/explain", { body: { connection_name: "billed", sql, row_limit: 10 } })
    expect(explained.status, explained.text).toBe(200)
    expect(explained.json).toMatchObject({ estimated_bytes: 40_000, plan: { statement_type: "SELECT", total_bytes_processed: 40_000 }, warnings: [] })

    await api("/api/query", { body: { connection_name: "billed", sql, row_limit: 10, session: "bq" } })
    await api("/api/query", { body: { connection_name: "billed", sql, row_limit: 10, session: "bq" } })
    const spent = await api("/api/query", { body: { connection_name: "billed", sql, row_limit: 10, session: "bq" } })
    expect([spent.status, spent.json.code, spent.json.message]).toEqual([429, "budget_exhausted", 'The budget of session "bq" is spent (bytes_scanned)'])
  })
  it("reads the dataset's INFORMATION_SCHEMA and __TABLES__ as dry-run-checked jobs: keys, partitioning, clustering, descriptions, rows", async () => {
    const { tables, compactLines } = await scanThrough(gateway, "bigquery", {
      db_type: "bigquery",
      project: PROJECT,
      dataset: FAKE_SCHEMA,
      credentials_json: account.json,
      api_endpoint: fake.url,
      location: "US"
    })
    expectKeysAndFacts(tables, "bigquery")
    expect(compactLines).toContain("shop.orders (5.4K rows): id INT64*, customer_id INT64*→customers.id, total NUMERIC")
    // Both reads went through a dry run and then a job.
    for (const view of ["tables", "columns"]) {
      const read = new RegExp(`information_schema\\.${view}`, "i")
      expect(fake.dryRuns.some((d) => read.test(d.sql))).toBe(true)
      expect([...fake.jobs.values()].some((j) => read.test(j.sql))).toBe(true)
    }
  })
})
