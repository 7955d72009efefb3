import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ConnectionInput } from "../../../src/domain/Connection"
import { type ClickhouseFake, startClickhouseFake } from "../../fakes/ClickhouseFake"
import { selfSignedCertificate } from "../../fakes/FakeServer"
import { failure, withPool } from "../../support/Connectors"

const PASSWORD = "ch-Secret-pw-4711"
const WRONG = "not-the-Secret-0815"

const eventually = async (check: () => boolean, ms = 3000) => {
  const deadline = Date.now() + ms
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
  return check()
}

describe("clickhouse connector against the HTTP-interface fake", () => {
  let fake: ClickhouseFake
  beforeAll(async () => {
    fake = await startClickhouseFake({ users: { alice: PASSWORD }, databases: ["default", "system", "analytics"] })
  })
  afterAll(() => fake?.close())

  const connection = (extra: Record<string, unknown> = {}): ConnectionInput =>
    ({ name: "ch", db_type: "clickhouse", host: "127.0.0.1", port: fake.port, username: "alice", password: PASSWORD, database: "analytics", ...extra }) as ConnectionInput
  const sent = (fragment: string) => fake.queries.filter((q) => q.query.includes(fragment))

  it("returns rows with column names and types, caps them without reading the whole result, and sends the guards", async () => {
    const outcome = await withPool(connection(), (pool) =>
      Effect.all({
        events: pool.query("SELECT id, name, at FROM events", { timeoutMs: 4500, maxRows: 10, attribution: "/* sluice key=k1 */" }),
        capped: pool.query("SELECT number FROM numbers(10000000)", { timeoutMs: 20_000, maxRows: 5 })
      })
    )
    expect(outcome.events).toEqual({
      columns: [
        { name: "id", type: "UInt32" },
        { name: "name", type: "String" },
        { name: "at", type: "DateTime" }
      ],
      rows: [
        [1, "signup", "2024-01-01 10:00:00"],
        [2, "login", "2024-01-02 11:30:00"]
      ],
      truncated: false
    })
    expect(outcome.capped).toEqual({ columns: [{ name: "number", type: "UInt64" }], rows: [["0"], ["1"], ["2"], ["3"], ["4"]], truncated: true })

    const [events] = sent("FROM events")
    expect(events).toMatchObject({ method: "POST", user: "alice", database: "analytics" })
    expect(events!.query).toMatch(/^\/\* sluice key=k1 \*\/\nSELECT id, name, at FROM events \nFORMAT JSONCompactEachRowWithNamesAndTypes$/)
    expect(events!.settings).toMatchObject({ readonly: "1", max_execution_time: "5", cancel_http_readonly_queries_on_client_close: "1" })
    const [capped] = sent("numbers(10000000)")
    expect(capped!.queryId).not.toBe(events!.queryId)
    // The response was closed after a few rows: the fake never got to the end of the ten million.
    expect(await eventually(() => fake.abandoned.has(capped!.queryId))).toBe(true)
    expect(fake.abandoned.get(capped!.queryId)).toBeLessThan(10_000_000)
  })

  it("refuses writes through readonly=1, which the fake enforces as ClickHouse does, and one statement per request", async () => {
    const outcome = await withPool(connection(), (pool) => {
      const attempt = (sql: string) => Effect.either(pool.query(sql, { timeoutMs: 5000, maxRows: 10 }))
      return Effect.all({
        insert: attempt("INSERT INTO events VALUES (3, 'evil', now())"),
        create: attempt("CREATE TABLE evil (id UInt8) ENGINE = Memory"),
        two: attempt("SELECT 1; SELECT 2")
      })
    })
    expect(failure(outcome.insert)).toMatchObject({ step: "query", message: expect.stringMatching(/Cannot execute query in readonly mode/) })
    expect(failure(outcome.create)).toMatchObject({ step: "query", message: expect.stringMatching(/readonly mode/) })
    expect(failure(outcome.two).message).toMatch(/Multi-statements are not allowed/)
    expect(fake.writes).toEqual([])

    // Without the setting the same fake takes the write: the refusal above is the connector's doing.
    const direct = await fetch(`http://127.0.0.1:${fake.port}/?database=analytics`, {
      method: "POST",
      headers: { "X-ClickHouse-User": "alice", "X-ClickHouse-Key": PASSWORD },
      body: "INSERT INTO events VALUES (3, 'evil', now())"
    })
    expect(direct.status).toBe(200)
    expect(fake.writes).toHaveLength(1)
  })

  it("a timed-out or interrupted statement is aborted and KILLed on the server by its query_id", async () => {
    const started = Date.now()
    const outcome = await withPool(connection(), (pool) =>
      Effect.all({
        timedOut: Effect.either(pool.query("SELECT sleep(3)", { timeoutMs: 300, maxRows: 1 })),
        interrupted: Effect.either(pool.query("SELECT sleepEachRow(1) FROM numbers(100)", { timeoutMs: 60_000, maxRows: 1 }).pipe(Effect.timeout("300 millis"))),
        afterwards: pool.query("SELECT 1", { timeoutMs: 5000, maxRows: 1 })
      })
    )
    expect(Date.now() - started).toBeLessThan(3000)
    expect(failure(outcome.timedOut)).toMatchObject({ step: "timeout" })
    expect(Either.isLeft(outcome.interrupted)).toBe(true)
    expect(outcome.afterwards.rows).toEqual([[1]])

    const [sleep] = sent("SELECT sleep(3)")
    const [sleepEachRow] = sent("sleepEachRow(1)")
    expect(sleep!.settings["max_execution_time"]).toBe("1")
    expect(fake.killed).toEqual([sleep!.queryId, sleepEachRow!.queryId])
    expect(fake.running()).toEqual([])
    // The KILL itself is sent without readonly (the server would refuse it), as its own request.
    expect(sent("KILL QUERY").every((q) => q.settings["readonly"] === undefined)).toBe(true)
  })

  it("a wrong password or database fails at step auth, and no secret reaches the message", async () => {
    const ping = (extra: Record<string, unknown>) => withPool(connection(extra), (pool) => Effect.either(pool.ping))
    const wrongPassword = failure(await ping({ password: WRONG }))
    expect(wrongPassword.step).toBe("auth")
    expect(wrongPassword.message).not.toContain(WRONG)
    expect(failure(await ping({ database: "nope" })).step).toBe("auth")
    expect(failure(await ping({ port: 1 })).step).toBe("tcp")
    expect(Either.isRight(await ping({}))).toBe(true)
    // The ping is a SELECT (checks user, password and database), not /ping, which checks nothing.
    expect(fake.queries.at(-1)).toMatchObject({ query: expect.stringMatching(/^SELECT 1/), database: "analytics", settings: { readonly: "1" } })

    const afterQuery = await withPool(connection({ password: WRONG }), (pool) => Effect.either(pool.query("SELECT 1", { timeoutMs: 5000, maxRows: 1 })))
    expect(failure(afterQuery)).toMatchObject({ step: "auth" })
  })

  it("reports sockets in its pool statistics", async () => {
    const stats = await withPool(connection(), (pool) =>
      pool.query("SELECT 1", { timeoutMs: 5000, maxRows: 1 }).pipe(
        Effect.zipRight(Effect.sleep("50 millis")),
        Effect.map(() => pool.stats())
      )
    )
    expect(stats).toEqual({ total: 1, idle: 1, waiting: 0 })
  })
})

describe("clickhouse connector over HTTPS", () => {
  let fake: ClickhouseFake
  const certificate = selfSignedCertificate()
  beforeAll(async () => {
    fake = await startClickhouseFake({ users: { default: "" }, tls: certificate })
  })
  afterAll(() => fake?.close())

  const connection = (tls: Record<string, unknown>): ConnectionInput =>
    ({ name: "chs", db_type: "clickhouse", host: "127.0.0.1", port: fake.port, tls }) as ConnectionInput
  const ping = (tls: Record<string, unknown>) => withPool(connection(tls), (pool) => Effect.either(pool.ping))

  it("speaks TLS as the mode asks: require skips verification, verify-full checks the CA and the name", async () => {
    expect(Either.isRight(await ping({ mode: "require" }))).toBe(true)
    expect(failure(await ping({ mode: "verify-full" })).step).toBe("tls")
    expect(Either.isRight(await ping({ mode: "verify-full", ca_pem: certificate.cert }))).toBe(true)
    expect(failure(await ping({ mode: "disable" })).step).not.toBe("auth")
  })

  it("defaults to 8443 with TLS and 8123 without", async () => {
    const { ClickhouseConnector } = await import("../../../layers/connectors/Clickhouse")
    const base = { name: "x", db_type: "clickhouse", host: "db.example" } as const
    expect(ClickhouseConnector.address(base)).toEqual({ host: "db.example", port: 8123 })
    expect(ClickhouseConnector.address({ ...base, tls: { mode: "require" } })).toEqual({ host: "db.example", port: 8443 })
  })
})
