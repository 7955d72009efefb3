import * as net from "node:net"
import { Effect, Either } from "effect"
// @ts-expect-error mssql 12 ships no type declarations
import mssqlModule from "mssql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ConnectorError, ConnectorPool } from "../../../layers/connectors/Connector"
import { openTarget } from "../../../layers/connectors/ConnectorPools"
import { driverConfig, MssqlConnector } from "../../../layers/connectors/Mssql"
import type { ConnectionInput, MssqlInput } from "../../../src/domain/Connection"
import { type Gateway, localKey } from "../../support/Gateway"
import { startApp } from "../../support/InProcess"
import { request } from "../../support/Http"
import { TEST_MSSQL_URL } from "../../support/Servers"

type Mssql = typeof MssqlInput.Type

const PASSWORD = "Pw-never-shown-7731"
const base: Mssql = { name: "ms", db_type: "mssql", host: "db.example.internal", username: "reader", password: PASSWORD }

const attempt = (connection: ConnectionInput, use: (pool: ConnectorPool) => Effect.Effect<unknown, ConnectorError>) =>
  Effect.runPromise(
    Effect.either(Effect.scoped(Effect.flatMap(openTarget({ orgId: "o", connectionId: "c", version: 1, connection, secrets: [PASSWORD] }), use)))
  )

const failureOf = (result: Either.Either<unknown, ConnectorError>) => {
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left
}

describe("mssql driver configuration", () => {
  const endpoint = { host: "127.0.0.1", port: 14330 }

  it("dials the endpoint, asks for read-only intent, and maps the timeouts", () => {
    const config = driverConfig({ ...base, database: "sales" }, endpoint, 7000)
    expect(config).toMatchObject({
      server: "127.0.0.1",
      port: 14330,
      user: "reader",
      password: PASSWORD,
      database: "sales",
      connectionTimeout: 7000,
      requestTimeout: 7000,
      arrayRowMode: true,
      options: { readOnlyIntent: true, appName: "sluice", encrypt: false, trustServerCertificate: false }
    })
    expect(MssqlConnector.address(base)).toEqual({ host: "db.example.internal", port: 1433 })
    expect(MssqlConnector.address({ ...base, port: 1533 })).toEqual({ host: "db.example.internal", port: 1533 })
    expect(driverConfig({ name: "x", db_type: "mssql", host: "h", username: "u" }, endpoint, 1000)).not.toHaveProperty("password")
  })

  it("maps each TLS mode to encrypt and certificate checks, naming the database host rather than the tunnel's end", () => {
    const options = (tls: Mssql["tls"]) => driverConfig({ ...base, ...(tls ? { tls } : {}) }, endpoint, 1000).options
    expect(options(undefined)).toMatchObject({ encrypt: false })
    expect(options({ mode: "disable" })).toMatchObject({ encrypt: false })
    expect(options({ mode: "allow" })).toMatchObject({ encrypt: false })
    expect(options({ mode: "prefer" })).toMatchObject({ encrypt: true, trustServerCertificate: true })
    expect(options({ mode: "require" })).toMatchObject({ encrypt: true, trustServerCertificate: true })
    expect(options({ mode: "verify-ca" })).toMatchObject({ encrypt: true, trustServerCertificate: false })
    const full = options({ mode: "verify-full", ca_pem: "CA", client_cert_pem: "CERT", client_key_pem: "KEY" })
    expect(full).toMatchObject({
      encrypt: true,
      trustServerCertificate: false,
      serverName: "db.example.internal",
      cryptoCredentialsDetails: { ca: "CA", cert: "CERT", key: "KEY" }
    })
    // An IP address is no TLS server name: the driver then checks the certificate against the address it dials.
    expect(driverConfig({ ...base, host: "10.0.0.5", tls: { mode: "verify-full" } }, endpoint, 1000).options).not.toHaveProperty("serverName")
  })

  it("declares its guards and limits honestly", () => {
    expect(MssqlConnector.capabilities).toMatchObject({ db_type: "mssql", limit_syntax: "top", server_side_cancel: true })
    expect(MssqlConnector.capabilities.read_only_guard).toMatch(/no read-only session/)
    expect(MssqlConnector.capabilities.verified_against).toMatch(/^not verified against a live server/)
  })
})

describe("mssql connection failures, through the real driver", () => {
  let silent: net.Server
  let silentPort: number

  beforeAll(async () => {
    // Accepts TCP and never answers the TDS pre-login: the driver's connect timeout has to end it.
    silent = net.createServer((socket) => socket.resume())
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    silentPort = (silent.address() as net.AddressInfo).port
  })
  afterAll(() => new Promise<void>((resolve) => silent.close(() => resolve())))

  it("a closed port is a tcp failure and a bad name a dns failure, neither naming the password", async () => {
    const closed = failureOf(await attempt({ ...base, host: "127.0.0.1", port: 1 }, (pool) => pool.ping))
    expect(closed.step).toBe("tcp")
    const unresolved = failureOf(await attempt({ ...base, host: "no-such-host.invalid" }, (pool) => pool.ping))
    expect(unresolved.step).toBe("dns")
    for (const e of [closed, unresolved]) expect(e.message).not.toContain(PASSWORD)
  })

  it("a server that never answers fails within the connect timeout, as tcp", async () => {
    for (const tls of [undefined, { mode: "verify-full" as const }]) {
      const started = Date.now()
      const error = failureOf(
        await attempt({ ...base, host: "127.0.0.1", port: silentPort, connection_timeout: 1, ...(tls ? { tls } : {}) }, (pool) => pool.ping)
      )
      expect(error.step).toBe("tcp")
      expect(error.message).not.toContain(PASSWORD)
      expect(Date.now() - started).toBeLessThan(2500)
    }
  })
})

const live = TEST_MSSQL_URL === undefined ? null : new URL(TEST_MSSQL_URL)
if (live === null) console.warn("skipping the live SQL Server suite: TEST_MSSQL_URL is not set (no SQL Server runs on these machines)")

const liveConnection = (extra: Partial<Mssql> = {}): Mssql => {
  const url = live!
  const tls = url.searchParams.get("tls")
  return {
    name: "ms_live",
    db_type: "mssql",
    host: url.hostname,
    port: Number(url.port || 1433),
    username: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    ...(url.pathname.length > 1 ? { database: decodeURIComponent(url.pathname.slice(1)) } : {}),
    ...(tls ? { tls: { mode: tls as NonNullable<Mssql["tls"]>["mode"] } } : {}),
    ...extra
  }
}

describe.skipIf(live === null)("mssql against a live SQL Server", () => {
  const table = `sluice_guard_${process.pid}`
  let admin: { request(): { batch(sql: string): Promise<{ recordset: Array<Record<string, unknown>> }> }; close(): Promise<unknown> }

  const running = async (marker: string) =>
    (
      await admin.request().batch(`select count(*) as n from sys.dm_exec_requests r cross apply sys.dm_exec_sql_text(r.sql_handle) t
        where t.text like '%${marker}%' and r.session_id <> @@spid`)
    ).recordset[0]!["n"] as number

  const settles = async (marker: string) => {
    const deadline = Date.now() + 5000
    let n = await running(marker)
    while (n > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100))
      n = await running(marker)
    }
    return n
  }

  beforeAll(async () => {
    const c = liveConnection()
    const tlsOn = c.tls !== undefined && c.tls.mode !== "disable" && c.tls.mode !== "allow"
    admin = new mssqlModule.ConnectionPool({
      server: c.host,
      port: c.port,
      user: c.username,
      password: c.password,
      ...(c.database ? { database: c.database } : {}),
      options: { encrypt: tlsOn, trustServerCertificate: true }
    })
    await (admin as unknown as { connect(): Promise<unknown> }).connect()
    await admin.request().batch(`create table ${table} (id int); insert into ${table} select top 50 row_number() over (order by (select null)) from sys.all_objects`)
  })
  afterAll(async () => {
    await admin?.request().batch(`drop table if exists ${table}`)
    await admin?.close()
  })

  it("reads rows with names and types, caps them, rolls back writes and cancels a timed-out statement on the server", async () => {
    const outcome = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const pool = yield* openTarget({ orgId: "o", connectionId: "c", version: 1, connection: liveConnection(), secrets: [] })
          return yield* Effect.all({
            capped: pool.query(`select id from ${table} order by id`, { timeoutMs: 5000, maxRows: 10 }),
            all: pool.query(`select id from ${table} order by id`, { timeoutMs: 5000, maxRows: 100 }),
            write: Effect.either(pool.query(`insert into ${table} values (99); select 1 as done`, { timeoutMs: 5000, maxRows: 1 })),
            slow: Effect.either(pool.query("waitfor delay '00:00:30'", { timeoutMs: 500, maxRows: 1 })),
            interrupted: Effect.either(pool.query("waitfor delay '00:00:31'", { timeoutMs: 60_000, maxRows: 1 }).pipe(Effect.timeout("500 millis"))),
            afterwards: pool.query(`select count(*) as n from ${table}`, { timeoutMs: 5000, maxRows: 1 }),
            probe: pool.query(MssqlConnector.privilegesProbe, { timeoutMs: 5000, maxRows: 1 })
          })
        })
      )
    )
    expect(outcome.capped.columns).toEqual([{ name: "id", type: "int" }])
    expect(outcome.capped.rows).toEqual(Array.from({ length: 10 }, (_, i) => [i + 1]))
    expect(outcome.capped.truncated).toBe(true)
    expect(outcome.all.rows).toHaveLength(50)
    expect(outcome.all.truncated).toBe(false)
    expect(Either.getLeft(outcome.slow).pipe((e) => e._tag === "Some" && e.value.step)).toBe("timeout")
    expect(Either.isLeft(outcome.interrupted)).toBe(true)
    expect(outcome.afterwards.rows).toEqual([[50]])
    expect(Number(outcome.probe.rows[0]![0])).toBeGreaterThanOrEqual(1)
    expect(await settles("00:00:3")).toBe(0)
  })

  it("a statement blocked on another session's lock fails with the lock timeout the connector set", async () => {
    const holder = new mssqlModule.Transaction(admin)
    await holder.begin()
    await new mssqlModule.Request(holder).batch(`update ${table} set id = id where id = 1`)
    try {
      const result = await attempt(liveConnection(), (pool) => pool.query(`select * from ${table}`, { timeoutMs: 4000, maxRows: 100 }))
      expect(failureOf(result).message).toMatch(/Lock request time out/i)
    } finally {
      await holder.rollback()
    }
  })

  it("a wrong password is an auth failure that does not name it", async () => {
    const error = failureOf(await attempt(liveConnection({ password: PASSWORD }), (pool) => pool.ping))
    expect(error.step).toBe("auth")
    expect(error.message).not.toContain(PASSWORD)
  })
})

describe("mssql over HTTP through a real gateway", () => {
  let gateway: Gateway
  let key: string

  beforeAll(async () => {
    gateway = await startApp()
    key = await localKey(gateway)
  })
  afterAll(() => gateway?.stop())

  const api = (route: string, body?: unknown) => request(gateway.url, route, { key, method: "POST", ...(body !== undefined ? { body } : {}) })

  it("creates a connection, and test and diagnose name the failing step", async () => {
    expect((await api("/api/connections", { ...base, name: "ms_closed", host: "127.0.0.1", port: 1 })).status).toBe(201)
    const tested = await api("/api/connections/ms_closed/test")
    expect(tested.json).toMatchObject({ ok: false, step: "tcp" })
    expect(tested.json.latency_ms).toBeGreaterThan(0)
    expect(tested.text).not.toContain(PASSWORD)
    const diagnosed = await api("/api/connections/ms_closed/diagnose")
    expect(diagnosed.json.ok).toBe(false)
    expect(diagnosed.json.steps.map((s: { step: string; status: string }) => `${s.step}:${s.status}`)).toEqual(["dns:ok", "tcp:failed"])
  })

  it.skipIf(live === null)("against the live server: test and diagnose pass, a wrong password fails at auth", async () => {
    expect((await api("/api/connections", liveConnection({ name: "ms_live" }))).status).toBe(201)
    const tested = await api("/api/connections/ms_live/test")
    expect(tested.json).toMatchObject({ ok: true })
    expect(tested.json.latency_ms).toBeGreaterThan(0)
    const diagnosed = await api("/api/connections/ms_live/diagnose")
    expect(diagnosed.json.ok).toBe(true)
    expect(diagnosed.json.steps.map((s: { step: string }) => s.step)).toEqual(expect.arrayContaining(["dns", "tcp", "auth", "privileges"]))
    expect((await api("/api/connections", liveConnection({ name: "ms_bad_pw", password: PASSWORD }))).status).toBe(201)
    const refused = await api("/api/connections/ms_bad_pw/test")
    expect(refused.json).toMatchObject({ ok: false, step: "auth" })
    expect(refused.text).not.toContain(PASSWORD)
  })
})
