import { Effect, Either, Fiber } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ConnectorError } from "../../../layers/connectors/Connector"
import { openTarget } from "../../../layers/connectors/ConnectorPools"
import type { EgressPolicy } from "../../../layers/connectors/Connector"
import { TrinoConnector } from "../../../layers/connectors/Trino"
import type { ConnectionInput } from "../../../src/domain/Connection"
import { selfSignedCertificate } from "../../fakes/FakeServer"
import { startTrinoFake, type TrinoFake } from "../../fakes/TrinoFake"
import { failure, withPool } from "../../support/Connectors"

const PASSWORD = "trino-Secret-pw-2718"
const WRONG = "not-the-Secret-3141"

describe("trino connector against the REST-protocol fake", () => {
  let fake: TrinoFake
  beforeAll(async () => {
    fake = await startTrinoFake({ pageSize: 10 })
  })
  afterAll(() => fake?.close())

  const connection = (): ConnectionInput =>
    ({ name: "tr", db_type: "trino", host: "127.0.0.1", port: fake.port, username: "carol", catalog: "hive", schema_name: "sales" }) as ConnectionInput
  const statement = (fragment: string) => {
    const found = fake.statements.filter((s) => s.sql.includes(fragment))
    expect(found).toHaveLength(1)
    return found[0]!
  }

  it("follows nextUri across pages, with columns, the user, catalog, schema and the time limit on the statement", async () => {
    const result = await withPool(connection(), (pool) =>
      pool.query("SELECT n FROM UNNEST(sequence(1, 25)) AS t(n)", { timeoutMs: 4200, maxRows: 100, attribution: "-- sluice key=k1" })
    )
    expect(result.columns).toEqual([{ name: "n", type: "bigint" }])
    expect(result.rows).toEqual(Array.from({ length: 25 }, (_, i) => [i + 1]))
    expect(result.truncated).toBe(false)

    const sent = statement("sequence(1, 25)")
    expect(sent).toMatchObject({ user: "carol", source: "sluice", catalog: "hive", schema: "sales", session: { query_max_execution_time: "5s" } })
    expect(sent.sql).toBe("-- sluice key=k1\nSELECT n FROM UNNEST(sequence(1, 25)) AS t(n)")
    // The queued page, then three pages of ten, ten and five rows.
    expect(sent.pagesServed).toBe(4)
    expect(fake.cancelled).not.toContain(sent.id)
  })

  it("stops at the row cap and cancels the rest of the statement with DELETE", async () => {
    const result = await withPool(connection(), (pool) => pool.query("SELECT n FROM UNNEST(sequence(1, 100000)) AS t(n)", { timeoutMs: 5000, maxRows: 15 }))
    expect(result.rows).toEqual(Array.from({ length: 15 }, (_, i) => [i + 1]))
    expect(result.truncated).toBe(true)
    const sent = statement("sequence(1, 100000)")
    expect(sent.pagesServed).toBe(3)
    expect(fake.cancelled).toContain(sent.id)
    expect(fake.running()).not.toContain(sent.id)
  })

  it("a timed-out or interrupted statement is cancelled on the server with DELETE on its nextUri", async () => {
    const started = Date.now()
    const outcome = await withPool(connection(), (pool) =>
      Effect.all({
        timedOut: Effect.either(pool.query("SELECT count(*) FROM slow", { timeoutMs: 300, maxRows: 1 })),
        interrupted: Effect.either(pool.query("SELECT * FROM slow WHERE x = 2", { timeoutMs: 60_000, maxRows: 1 }).pipe(Effect.timeout("300 millis"))),
        afterwards: pool.query("SELECT 1", { timeoutMs: 5000, maxRows: 1 })
      })
    )
    expect(Date.now() - started).toBeLessThan(3000)
    expect(failure(outcome.timedOut)).toMatchObject({ step: "timeout" })
    expect(Either.isLeft(outcome.interrupted)).toBe(true)
    expect(outcome.afterwards.rows).toEqual([[1]])
    const timedOut = statement("count(*) FROM slow")
    const interrupted = statement("WHERE x = 2")
    expect(timedOut.session["query_max_execution_time"]).toBe("1s")
    expect(fake.cancelled).toEqual(expect.arrayContaining([timedOut.id, interrupted.id]))
    expect(fake.running()).toEqual([])
  })

  it("passes the server's errors on with their message, and runs one statement per request", async () => {
    const outcome = await withPool(connection(), (pool) =>
      Effect.all({
        missing: Effect.either(pool.query("SELECT * FROM unknown", { timeoutMs: 5000, maxRows: 1 })),
        two: Effect.either(pool.query("SELECT 1; SELECT 2", { timeoutMs: 5000, maxRows: 1 }))
      })
    )
    expect(failure(outcome.missing)).toMatchObject({ step: "query", message: expect.stringMatching(/does not exist/) })
    expect(failure(outcome.two)).toMatchObject({ step: "query", message: expect.stringMatching(/mismatched input ';'/) })
  })

  it("counts statements in flight in its pool statistics", async () => {
    const stats = await withPool(connection(), (pool) =>
      Effect.gen(function* () {
        const slow = yield* Effect.fork(pool.query("SELECT * FROM slow WHERE x = 3", { timeoutMs: 60_000, maxRows: 1 }))
        yield* Effect.sleep("100 millis")
        const during = pool.stats()
        yield* Fiber.interrupt(slow)
        return { during, after: pool.stats() }
      })
    )
    expect(stats).toEqual({ during: { total: 4, idle: 3, waiting: 0 }, after: { total: 4, idle: 4, waiting: 0 } })
  })

  it("defaults to 8080, and to HTTPS on 8443 with TLS or a password", () => {
    const base = { name: "x", db_type: "trino", host: "db.example", username: "u" } as const
    expect(TrinoConnector.address(base)).toEqual({ host: "db.example", port: 8080 })
    expect(TrinoConnector.address({ ...base, password: "p" })).toEqual({ host: "db.example", port: 8443 })
    expect(TrinoConnector.address({ ...base, tls: { mode: "require" } })).toEqual({ host: "db.example", port: 8443 })
  })

  it("dials the addresses the egress policy checked at each connect, so a name cannot rebind after the check", async () => {
    // trino.invalid resolves nowhere: the socket reaches the fake only through the policy's answer.
    let checks = 0
    const answering = (refuseFrom: number): EgressPolicy => ({
      check: (endpoint) =>
        ++checks >= refuseFrom
          ? Effect.fail(new ConnectorError({ step: "config", message: `This gateway does not connect to ${endpoint.host}: rebound` }))
          : Effect.succeed([{ address: "127.0.0.1", family: 4 }])
    })
    const run = (policy: EgressPolicy) =>
      Effect.runPromise(
        Effect.scoped(
          Effect.flatMap(
            openTarget({ orgId: "o", connectionId: "c", version: 1, connection: { ...connection(), host: "trino.invalid" } as ConnectionInput, secrets: [] }, policy),
            (pool) => Effect.either(pool.query("SELECT n FROM UNNEST(sequence(1, 3)) AS t(n)", { timeoutMs: 5000, maxRows: 10 }))
          )
        )
      )
    const pinned = await run(answering(Infinity))
    expect(Either.getOrThrow(pinned).rows).toEqual([[1], [2], [3]])
    // Allowed when the pool opens, refused when the socket opens: nothing is sent.
    checks = 0
    const before = fake.statements.length
    const rebound = await run(answering(2))
    expect(failure(rebound)).toMatchObject({ step: "config", message: expect.stringContaining("rebound") })
    expect(fake.statements).toHaveLength(before)
  })
})

describe("trino connector with password authentication over HTTPS", () => {
  let fake: TrinoFake
  const certificate = selfSignedCertificate()
  beforeAll(async () => {
    fake = await startTrinoFake({ users: { dave: PASSWORD }, tls: certificate })
  })
  afterAll(() => fake?.close())

  const ping = (extra: Record<string, unknown>) =>
    withPool(
      { name: "trs", db_type: "trino", host: "127.0.0.1", port: fake.port, username: "dave", password: PASSWORD, tls: { mode: "require" }, ...extra } as ConnectionInput,
      (pool) => Effect.either(pool.ping)
    )

  it("logs in with basic auth; a wrong password is step auth with no secret in the message", async () => {
    expect(Either.isRight(await ping({}))).toBe(true)
    expect(fake.statements.at(-1)).toMatchObject({ user: "dave", sql: "SELECT 1" })
    const wrong = failure(await ping({ password: WRONG }))
    expect(wrong.step).toBe("auth")
    expect(wrong.message).not.toContain(WRONG)
    expect(wrong.message).not.toContain(PASSWORD)
  })

  it("a password always goes over HTTPS, verified against the system CAs unless the TLS mode says otherwise", async () => {
    // No TLS settings: HTTPS with verification, which this self-signed fake fails, so the password never went out in clear.
    expect(failure(await ping({ tls: undefined })).step).toBe("tls")
    expect(Either.isRight(await ping({ tls: { mode: "verify-full", ca_pem: certificate.cert } }))).toBe(true)
  })
})
