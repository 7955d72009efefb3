import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { openTarget } from "../../../layers/connectors/ConnectorPools"
import type { ConnectionInput } from "../../../src/domain/Connection"
import {
  type BigqueryFake,
  type ConnectorProcess,
  type ConnectorStep,
  type RefusedPort,
  type ServiceAccount,
  startBigqueryFake,
  startConnectorProcess,
  type StepOutcome
} from "../../fakes/BigqueryFake"
import { freePort } from "../../support/Gateway"
import { Relay } from "../../support/Relay"

const PROJECT = "sluice-test"
const ORDERS = "select id, name from orders order by id"
const MANY = "select id from many"
const TYPED = "select big, amount, at, day, ok, score from typed"
const SLOWISH = "select total from slowish"
const SLOW = "select * from waiting where n = 1"
const SLOW_INTERRUPTED = "select * from waiting where n = 2"
const SLOW_AT_CLOSE = "select * from waiting where n = 3"
const WRITES = {
  insert: ["insert into orders values (99, 'x')", "INSERT"],
  ddl: ["create table evil (id int64)", "CREATE_TABLE"],
  script: ["select 1; select 2", "SCRIPT"]
} as const
const HUGE = "select * from huge"
const REDIRECTED = "select * from elsewhere"
const BYTE_CAP = 1_000_000

// The driver runs in a child that trusts the fake's certificate (see startConnectorProcess).
describe("bigquery connector against a protocol fake, through the real driver", () => {
  let fake: BigqueryFake
  let host: ConnectorProcess
  let account: ServiceAccount

  beforeAll(async () => {
    fake = await startBigqueryFake(PROJECT)
    fake.define(ORDERS, {
      statementType: "SELECT",
      totalBytesProcessed: 1000,
      fields: [{ name: "id", type: "INTEGER" }, { name: "name", type: "STRING" }],
      rows: Array.from({ length: 25 }, (_, i) => [String(i + 1), `name-${i + 1}`])
    })
    fake.define(TYPED, {
      statementType: "SELECT",
      fields: [
        { name: "big", type: "INTEGER" },
        { name: "amount", type: "NUMERIC" },
        { name: "at", type: "TIMESTAMP" },
        { name: "day", type: "DATE" },
        { name: "ok", type: "BOOLEAN" },
        { name: "score", type: "FLOAT" }
      ],
      rows: [["9007199254740993", "12.50", "1700000000123456", "2024-01-02", "true", "0.5"], ["7", null, null, null, "false", null]]
    })
    fake.define(SLOWISH, { statementType: "SELECT", runMs: 1200, fields: [{ name: "total", type: "INTEGER" }], rows: [["42"]] })
    for (const sql of [SLOW, SLOW_INTERRUPTED, SLOW_AT_CLOSE]) fake.define(sql, { statementType: "SELECT", runMs: 60_000, fields: [{ name: "n", type: "INTEGER" }], rows: [["1"]] })
    for (const [sql, statementType] of Object.values(WRITES)) fake.define(sql, { statementType })
    fake.define(HUGE, { statementType: "SELECT", totalBytesProcessed: 5_000_000_000, fields: [{ name: "x", type: "STRING" }], rows: [] })
    fake.define("select 1", { statementType: "SELECT", fields: [{ name: "f0_", type: "INTEGER" }], rows: [["1"]] })
    account = fake.serviceAccount()
    host = await startConnectorProcess(fake.caPath)
  })
  afterAll(async () => {
    await host?.stop()
    await fake?.close()
  })

  const connection = (extra: Record<string, unknown> = {}) => ({
    name: "bq",
    db_type: "bigquery",
    project: PROJECT,
    dataset: "sales",
    credentials_json: account.json,
    api_endpoint: fake.url,
    location: "EU",
    maximum_bytes_billed: BYTE_CAP,
    ...extra
  })
  const run = (steps: ReadonlyArray<ConnectorStep>, extra: Record<string, unknown> = {}, refuse?: RefusedPort) => {
    const c = connection(extra)
    return host.run(c, [c.credentials_json as string], steps, refuse)
  }
  const value = (outcome: StepOutcome | undefined) => {
    if (outcome === undefined || !outcome.ok) throw new Error(`expected a success, got ${JSON.stringify(outcome)}`)
    return outcome.value
  }
  const jobsFor = (sql: string) => [...fake.jobs.values()].filter((j) => j.sql.endsWith(sql))

  it("dry-runs, then runs a SELECT as a guarded job; rows capped without reading the rest, columns typed, values exact", async () => {
    const { open, results } = await run([
      { op: "ping" },
      { op: "query", sql: ORDERS, maxRows: 10 },
      { op: "query", sql: TYPED },
      { op: "query", sql: SLOWISH },
      { op: "stats" }
    ])
    expect(open.ok).toBe(true)
    expect(results[0]!.ok).toBe(true)

    const orders = value(results[1])
    expect(orders.columns).toEqual([{ name: "id", type: "integer" }, { name: "name", type: "string" }])
    expect(orders.rows).toHaveLength(10)
    expect(orders.rows[0]).toEqual([1, "name-1"])
    expect(orders.truncated).toBe(true)
    const [job] = jobsFor(ORDERS)
    expect(job!.rowsServed).toBe(11)
    expect(job!.configuration).toMatchObject({
      query: { useLegacySql: false, maximumBytesBilled: String(BYTE_CAP), defaultDataset: { projectId: PROJECT, datasetId: "sales" } },
      jobTimeoutMs: "10000",
      labels: { client: "sluice" }
    })
    expect(job!.configuration.dryRun).toBeUndefined()
    expect(job!.location).toBe("EU")
    expect(fake.dryRuns.map((d) => d.sql)).toContain(ORDERS)

    const typed = value(results[2])
    expect(typed.rows).toEqual([
      ["9007199254740993", "12.5", "2023-11-14T22:13:20.123456000Z", "2024-01-02", true, 0.5],
      [7, null, null, null, false, null]
    ])
    expect(typed.truncated).toBe(false)
    // jobComplete: false until the job ends; the connector keeps polling.
    expect(value(results[3]).rows).toEqual([[42]])
    expect(value(results[4])).toEqual({ total: 4, idle: 4, waiting: 0 })
    expect(fake.requests).toContain("POST /token")
  })

  it("a meter that refuses stops the read: no rows kept, no further page fetched", async () => {
    fake.define(MANY, { statementType: "SELECT", fields: [{ name: "id", type: "INTEGER" }], rows: Array.from({ length: 25_000 }, (_, i) => [String(i)]) })
    const { results } = await run([{ op: "query", sql: MANY, maxRows: 100_000, maxBytes: 1_000 }])
    expect(value(results[0])).toMatchObject({ rows: [], oversized: true })
    // Pages are 10,000 rows: the first was read, the two after it never asked for.
    expect(jobsFor(MANY)[0]!.rowsServed).toBe(10_000)
  })

  it("refuses writes, DDL, scripts and statements over maximum_bytes_billed at the dry run: none becomes a job", async () => {
    const { results } = await run([...Object.values(WRITES), [HUGE]].map(([sql]) => ({ op: "query" as const, sql })))
    expect(results.map((r) => !r.ok && "step" in r && r.step)).toEqual(["query", "query", "query", "query"])
    const messages = results.map((r) => (!r.ok && "message" in r ? r.message : ""))
    expect(messages[0]).toMatch(/Only SELECT statements run here.*INSERT/)
    expect(messages[1]).toMatch(/CREATE_TABLE/)
    expect(messages[2]).toMatch(/SCRIPT/)
    expect(messages[3]).toMatch(/5000000000 bytes, above the 1000000 bytes it may bill \(maximum_bytes_billed\)/)
    for (const [sql] of [...Object.values(WRITES), [HUGE]]) {
      expect(fake.dryRuns.map((d) => d.sql)).toContain(sql)
      expect(jobsFor(sql)).toEqual([])
    }
  })

  it("cancels a timed-out statement on the server, and an interrupted one too", async () => {
    const started = Date.now()
    const { results } = await run([
      { op: "query", sql: SLOW, timeoutMs: 1500 },
      { op: "query", sql: SLOW_INTERRUPTED, timeoutMs: 60_000, interruptAfterMs: 1000 },
      { op: "query", sql: "select 1" }
    ])
    expect(results[0]).toEqual({ ok: false, step: "timeout", message: "The statement was cancelled because it ran past its timeout" })
    expect(results[1]).toEqual({ ok: false, interrupted: true })
    expect(value(results[2]).rows).toEqual([[1]])
    expect(Date.now() - started).toBeLessThan(15_000)
    for (const sql of [SLOW, SLOW_INTERRUPTED]) {
      const [job] = jobsFor(sql)
      expect(job!.configuration.jobTimeoutMs).toBe(sql === SLOW ? "1500" : "60000")
      expect(fake.cancels).toContain(job!.jobId)
    }
  })

  it("closing the pool cancels the jobs still running", async () => {
    const { results } = await run([{ op: "start", sql: SLOW_AT_CLOSE }, { op: "stats" }])
    expect(value(results[1])).toEqual({ total: 4, idle: 3, waiting: 0 })
    const [job] = jobsFor(SLOW_AT_CLOSE)
    expect(fake.cancels).toContain(job!.jobId)
  })

  it("a key Google refuses is step auth, and no message carries the key", async () => {
    const stranger = fake.serviceAccount({ registered: false })
    const { open, results } = await run([{ op: "ping" }, { op: "query", sql: ORDERS }], { credentials_json: stranger.json })
    expect(open.ok).toBe(true)
    for (const r of results) {
      expect(r).toMatchObject({ ok: false, step: "auth" })
      const text = JSON.stringify(r)
      expect(text).not.toContain("PRIVATE KEY")
      expect(text).not.toContain(stranger.privateKey.split("\n")[1]!)
    }
  })

  it("refuses credentials that are not a service-account key before dialling, without echoing them", async () => {
    const parsed = JSON.parse(account.json)
    const cases = [
      "not json at all, secret-ish",
      JSON.stringify({ ...parsed, type: "external_account" }),
      JSON.stringify({ ...parsed, token_uri: "http://127.0.0.1:1/token" }),
      JSON.stringify({ ...parsed, private_key: "-----BEGIN PRIVATE KEY-----\nsecret-ish\n-----END PRIVATE KEY-----\n" })
    ]
    for (const credentials_json of cases) {
      const { open } = await run([{ op: "ping" }], { credentials_json })
      expect(open).toMatchObject({ ok: false, step: "config" })
      expect(JSON.stringify(open)).not.toMatch(/secret-ish|PRIVATE KEY|external_account/)
    }
  })

  it("dials only the fake: no Google host, no metadata server", async () => {
    const { dialled } = await run([])
    expect(dialled.length).toBeGreaterThan(0)
    expect(dialled.filter((d) => d !== `127.0.0.1:${new URL(fake.url).port}`)).toEqual([])
  })

  it("the key's token_uri goes through the egress policy: refused when the pool opens, and at every socket of a token request", async () => {
    // (After the test above: the child's record of what it dialled now includes the relay.)
    // The token endpoint on a port of its own, a relay to the fake, while the API endpoint stays allowed.
    const relay = new Relay(await freePort(), { host: "127.0.0.1", port: Number(new URL(fake.url).port) })
    await relay.open()
    try {
      const credentials_json = JSON.stringify({ ...JSON.parse(account.json), token_uri: `https://127.0.0.1:${relay.port}/token` })
      const refusal = { ok: false, step: "config", message: `This gateway does not connect to 127.0.0.1: port ${relay.port} is refused` }

      const atOpen = await run([{ op: "ping" }], { credentials_json }, { port: relay.port, afterChecks: 0 })
      expect(atOpen.open).toEqual(refusal)
      // Allowed when the pool opens, refused when the token request's socket opens: the calls fail with the refusal.
      const atSocket = await run([{ op: "ping" }, { op: "query", sql: ORDERS }], { credentials_json }, { port: relay.port, afterChecks: 1 })
      expect(atSocket.open.ok).toBe(true)
      expect(atSocket.results).toEqual([refusal, refusal])
      expect(relay.accepted).toBe(0)

      // Under a policy that allows it, the token is fetched there.
      const allowed = await run([{ op: "ping" }], { credentials_json })
      expect(allowed.results).toMatchObject([{ ok: true }])
      expect(relay.accepted).toBeGreaterThan(0)
    } finally {
      await relay.cut()
    }
  })

  it("every API request goes through the egress policy at its socket, and follows no redirect", async () => {
    // The API endpoint on a port of its own, a relay to the fake; the token endpoint stays the fake's.
    const relay = new Relay(await freePort(), { host: "127.0.0.1", port: Number(new URL(fake.url).port) })
    await relay.open()
    try {
      const api_endpoint = `https://127.0.0.1:${relay.port}`
      // Allowed when the pool opens, refused when an API request's socket opens: the calls fail with the refusal.
      const refused = await run([{ op: "ping" }, { op: "query", sql: ORDERS }], { api_endpoint }, { port: relay.port, afterChecks: 1 })
      expect(refused.open.ok).toBe(true)
      const refusal = { ok: false, step: "config", message: `This gateway does not connect to 127.0.0.1: port ${relay.port} is refused` }
      expect(refused.results).toEqual([refusal, refusal])
      expect(relay.accepted).toBe(0)

      // A 307 from the API to another port is not followed: the query fails, and the other port is never dialled.
      fake.define(REDIRECTED, { statementType: "SELECT", redirectTo: `${api_endpoint}/bigquery/v2/projects/${PROJECT}/jobs` })
      const redirected = await run([{ op: "query", sql: REDIRECTED }])
      expect(redirected.results).toEqual([{ ok: false, step: "config", message: "Google answered with a redirect (HTTP 307), which this gateway does not follow" }])
      expect(relay.accepted).toBe(0)
      expect(redirected.dialled).not.toContain(`127.0.0.1:${relay.port}`)

      // Under a policy that allows it, the API is reached there.
      const allowed = await run([{ op: "ping" }], { api_endpoint })
      expect(allowed.results).toMatchObject([{ ok: true }])
      expect(relay.accepted).toBeGreaterThan(0)
    } finally {
      await relay.cut()
    }
  })

  it("an untrusted certificate is step tls (this test process does not trust the fake)", async () => {
    const outcome = await Effect.runPromise(
      Effect.scoped(
        openTarget({ orgId: "o", connectionId: "c", version: 1, connection: connection() as ConnectionInput, secrets: [account.json] }).pipe(
          Effect.flatMap((pool) => pool.ping),
          Effect.either
        )
      )
    )
    expect(outcome._tag).toBe("Left")
    expect(outcome._tag === "Left" && outcome.left.step).toBe("tls")
  })
})
