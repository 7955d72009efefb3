import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeScrubber } from "../../../layers/connectors/DriverErrors"
import { SnowflakeConnector } from "../../../layers/connectors/Snowflake"
import type { SnowflakeInput } from "../../../src/domain/Connection"
import {
  type Certificate,
  type ChildJob,
  type ChildQuery,
  type ChildReport,
  makeCertificate,
  runConnectorInChild,
  type SnowflakeFake,
  startSnowflakeFake
} from "../../fakes/SnowflakeFake"
import { freePort } from "../../support/Gateway"
import { Relay } from "../../support/Relay"

const PASSWORD = "pw-snow-7f3a9c"
const WRONG = "pw-wrong-51d2e8"

const connection = (password: string): typeof SnowflakeInput.Type => ({
  name: "snow",
  db_type: "snowflake",
  account: "acme",
  username: "ALICE",
  password,
  warehouse: "WH",
  database: "DB",
  schema_name: "PUBLIC",
  role: "ANALYST"
})

const q = (sql: string, maxRows = 100, timeoutMs = 5_000, attribution?: string): ChildQuery => ({
  sql,
  maxRows,
  timeoutMs,
  ...(attribution !== undefined ? { attribution } : {})
})

describe("snowflake connector: the real snowflake-sdk against a Snowflake REST fake over HTTPS", () => {
  let certificate: Certificate
  let fake: SnowflakeFake
  let cwd: string
  let report: ChildReport

  const job = (password: string, steps: ChildJob["steps"]): ChildJob => ({
    connection: connection(password),
    endpoint: { host: fake.host, port: fake.port },
    connectTimeoutMs: 5_000,
    secrets: [password],
    steps
  })

  // One child process (Node reads NODE_EXTRA_CA_CERTS only at start-up) runs a pool with the right
  // password through every case, then one with a wrong password.
  beforeAll(async () => {
    certificate = makeCertificate(["127.0.0.1"])
    fake = await startSnowflakeFake({ certificate, users: { ALICE: PASSWORD } })
    cwd = fs.mkdtempSync(path.join(os.tmpdir(), "snowflake-child-"))
    report = await runConnectorInChild(
      [
        job(PASSWORD, [
          "ping",
          q("select n, label, price from table(generator(rowcount => 5))", 3),
          q("select n, label, price from table(generator(rowcount => 2))", 10, 5_000, "-- sluice key=k_1"),
          q("select n from table(generator(rowcount => 1000))", 150),
          q("select system$wait(10)", 10, 700),
          q("select 1"),
          q("select 1; select 2"),
          q("/* hi */ put file:///etc/passwd @~"),
          q("insert into orders values (1)"),
          q(`selec '${PASSWORD}'`),
          "stats",
          { concurrent: Array.from({ length: 6 }, () => q("select system$wait(1)")), statsAfterMs: 600 },
          { ...q("select n from table(generator(rowcount => 999))", 1000), maxBytes: 1_000 }
        ]),
        job(WRONG, ["ping"])
      ],
      certificate.certPath,
      cwd
    )
  })
  afterAll(async () => {
    await fake?.close()
  })

  it("caps rows, keeps columns, sends the session guards, cancels a timed-out statement on the server", () => {
    const good = report.pools[0]!
    const [ping, capped, small, chunked, slow, afterwards, two, put, write, syntax, stats, concurrent, metered] = good.outcomes

    expect(ping).toEqual({ ok: true, value: null })
    expect(capped).toEqual({
      ok: true,
      value: {
        columns: [{ name: "N", type: "fixed" }, { name: "LABEL", type: "text" }, { name: "PRICE", type: "fixed" }],
        rows: [[1, "row 1", "1.50"], [2, "row 2", "2.50"], [3, "row 3", "3.50"]],
        truncated: true
      }
    })
    expect(small).toMatchObject({ ok: true, value: { truncated: false } })
    expect(small?.ok && small.value.rows).toHaveLength(2)
    expect(fake.queries.find((x) => x.sqlText.includes("rowcount => 2"))!.sqlText).toMatch(/^-- sluice key=k_1\n/)

    // 1000 rows: 100 inline and nine chunks in "cloud storage"; the stream stops after row 151.
    expect(chunked?.ok && chunked.value.rows).toHaveLength(150)
    expect(chunked?.ok && chunked.value.truncated).toBe(true)
    const chunkedQuery = fake.queries.find((x) => x.sqlText.includes("rowcount => 1000"))!
    expect(fake.chunksServed.get(chunkedQuery.queryId)).toBeLessThan(9)
    // A meter that refuses past 1,000 bytes stops the stream too: no rows kept, the later chunks never fetched.
    expect(metered).toMatchObject({ ok: true, value: { rows: [], oversized: true } })
    const meteredQuery = fake.queries.find((x) => x.sqlText.includes("rowcount => 999"))!
    expect(fake.chunksServed.get(meteredQuery.queryId) ?? 0).toBeLessThan(9)

    expect(slow).toEqual({ ok: false, step: "timeout", message: "The statement was cancelled because it ran past its timeout" })
    const slowQuery = fake.queries.find((x) => x.sqlText === "select system$wait(10)")!
    expect(slowQuery.parameters).toMatchObject({ STATEMENT_TIMEOUT_IN_SECONDS: 1, MULTI_STATEMENT_COUNT: 1 })
    expect(fake.cancels.some((c) => c.queryId === slowQuery.queryId || c.requestId === slowQuery.requestId)).toBe(true)
    expect(afterwards).toMatchObject({ ok: true, value: { rows: [[1]] } })

    // The fake runs several statements unless the request itself says MULTI_STATEMENT_COUNT=1.
    expect(two).toEqual({ ok: false, step: "query", message: "Actual statement count 2 did not match the desired statement count 1." })
    expect(fake.queries.every((x) => x.parameters["MULTI_STATEMENT_COUNT"] === 1)).toBe(true)
    expect(put).toMatchObject({ ok: false, step: "query", message: expect.stringMatching(/PUT and GET/) })
    expect(fake.queries.some((x) => /put file/i.test(x.sqlText))).toBe(false)
    expect(write).toMatchObject({ ok: false, step: "privileges" })
    expect(syntax).toMatchObject({ ok: false, step: "query" })
    expect(syntax?.ok === false && syntax.message).toContain("***")
    expect(JSON.stringify(good)).not.toContain(PASSWORD)

    expect(fake.logins[0]).toMatchObject({
      account: "acme",
      user: "ALICE",
      ok: true,
      query: { warehouse: "WH", databaseName: "DB", schemaName: "PUBLIC", roleName: "ANALYST" }
    })
    expect(stats).toEqual({ ok: true, value: { total: 1, idle: 1, waiting: 0 } })
    // Six statements at once on a pool of four sessions: four run, two wait.
    expect(concurrent?.ok && concurrent.value.stats).toEqual({ total: 4, idle: 0, waiting: 2 })
    expect(concurrent?.ok && concurrent.value.outcomes.every((o: { ok: boolean }) => o.ok)).toBe(true)
  })

  it("logs every session out when the scope closes; the driver dials nothing but the endpoint and writes no log", () => {
    expect(report.pools.map((p) => p.afterClose)).toEqual([{ total: 0, idle: 0, waiting: 0 }, { total: 0, idle: 0, waiting: 0 }])
    expect(fake.openSessions()).toBe(0)
    expect(fake.logouts()).toBe(fake.logins.filter((l) => l.ok).length)
    expect(new Set(report.dialed)).toEqual(new Set([`127.0.0.1:${fake.port}`]))
    expect(report.output).toBe("")
    expect(fs.readdirSync(cwd)).toEqual([])
  })

  it("a wrong password fails at the auth step with no secret in the message or the output", () => {
    expect(report.pools[1]!.outcomes).toEqual([{ ok: false, step: "auth", message: "Connecting failed: Incorrect username or password was specified." }])
    expect(fake.logins.filter((l) => !l.ok)).toMatchObject([{ user: "ALICE", ok: false }])
    expect(JSON.stringify(report)).not.toContain(WRONG)
  })

  it("verifies the server certificate: without the CA trusted, the login fails at the tls step", async () => {
    const logins = fake.logins.length
    const result = await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(
          SnowflakeConnector.open({
            connection: connection(PASSWORD),
            endpoint: { host: fake.host, port: fake.port },
            connectTimeoutMs: 5_000,
            scrub: makeScrubber([PASSWORD])
          }),
          (pool) => Effect.either(pool.ping)
        )
      )
    )
    expect(Either.getLeft(result).pipe((e) => e._tag === "Some" && e.value.step)).toBe("tls")
    expect(fake.logins.length).toBe(logins)
  })

  it("dials <account>.snowflakecomputing.com:443 unless a host is given", () => {
    expect(SnowflakeConnector.address(connection(PASSWORD))).toEqual({ host: "acme.snowflakecomputing.com", port: 443 })
    expect(SnowflakeConnector.address({ ...connection(PASSWORD), host: "acme.privatelink.snowflakecomputing.com" })).toEqual({
      host: "acme.privatelink.snowflakecomputing.com",
      port: 443
    })
  })
})

describe("snowflake connector: every socket of the driver goes through the egress policy", () => {
  let certificate: Certificate
  let fake: SnowflakeFake
  let relay: Relay
  let cwd: string
  const CHUNKED = "select n from table(generator(rowcount => 1000))"

  const job = (steps: ChildJob["steps"], refusePort?: number): ChildJob => ({
    connection: connection(PASSWORD),
    endpoint: { host: fake.host, port: fake.port },
    connectTimeoutMs: 5_000,
    secrets: [PASSWORD],
    steps,
    ...(refusePort !== undefined ? { refusePort } : {})
  })

  // The result chunks' URLs name another port, a relay to the fake, as cloud storage is another host than the account.
  beforeAll(async () => {
    certificate = makeCertificate(["127.0.0.1"])
    const chunkPort = await freePort()
    fake = await startSnowflakeFake({ certificate, users: { ALICE: PASSWORD }, chunkPort })
    relay = new Relay(chunkPort, { host: fake.host, port: fake.port })
    await relay.open()
    cwd = fs.mkdtempSync(path.join(os.tmpdir(), "snowflake-child-"))
  })
  afterAll(async () => {
    await relay?.cut()
    await fake?.close()
  })

  it("a result chunk on a host the policy refuses is not fetched: the statement fails with the refusal, and the account is checked at every socket too", async () => {
    const refused = await runConnectorInChild(
      [job([q(CHUNKED, 150, 20_000), q("select 1")], relay.port), job(["ping"], fake.port)],
      certificate.certPath,
      cwd
    )
    const [chunked, after] = refused.pools[0]!.outcomes
    expect(chunked).toEqual({ ok: false, step: "config", message: `This gateway does not connect to 127.0.0.1: port ${relay.port} is refused` })
    expect(relay.accepted).toBe(0)
    expect(refused.dialed).not.toContain(`127.0.0.1:${relay.port}`)
    expect(fake.chunksServed.size).toBe(0)
    // The session is dropped and the pool goes on.
    expect(after).toMatchObject({ ok: true, value: { rows: [[1]] } })

    // Refused when the login's socket opens: nothing reaches the account (the two logins are the first pool's sessions).
    expect(refused.pools[1]!.outcomes).toEqual([{ ok: false, step: "config", message: `This gateway does not connect to 127.0.0.1: port ${fake.port} is refused` }])
    expect(fake.logins).toHaveLength(2)

    // The same statement under a policy that allows the chunks' host reads them through the relay.
    const allowed = await runConnectorInChild([job([q(CHUNKED, 150)])], certificate.certPath, cwd)
    expect(allowed.pools[0]!.outcomes[0]).toMatchObject({ ok: true, value: { truncated: true } })
    expect(relay.accepted).toBeGreaterThan(0)
    expect(fake.chunksServed.size).toBe(1)
  })

  it("follows no redirect: a chunk answered with a 307 elsewhere fails the statement, and the other host is not dialled", async () => {
    const elsewhere = new Relay(await freePort(), { host: fake.host, port: fake.port })
    await elsewhere.open()
    const redirecting = await startSnowflakeFake({ certificate, users: { ALICE: PASSWORD }, redirectChunksTo: `https://127.0.0.1:${elsewhere.port}` })
    try {
      const report = await runConnectorInChild(
        [{ connection: connection(PASSWORD), endpoint: { host: redirecting.host, port: redirecting.port }, connectTimeoutMs: 5_000, secrets: [PASSWORD], steps: [q(CHUNKED, 150)] }],
        certificate.certPath,
        cwd
      )
      expect(report.pools[0]!.outcomes[0]).toEqual({ ok: false, step: "query", message: "Request to S3/Blob failed." })
      expect(elsewhere.accepted).toBe(0)
      expect(report.dialed).not.toContain(`127.0.0.1:${elsewhere.port}`)
    } finally {
      await redirecting.close()
      await elsewhere.cut()
    }
  })
})
