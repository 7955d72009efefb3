import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTrinoFake, type TrinoFake } from "../fakes/TrinoFake"
import { type Gateway } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { type IdentityProvider, startIdentityProvider } from "../support/IdentityProvider"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const hasPostgres = await postgresAvailable()

/** A loopback-only service the gateway must never fetch for a tenant: it answers like a Trino page full of secrets. */
const startInternalService = async () => {
  const hits: Array<string> = []
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`)
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ id: "x", columns: [{ name: "secret", type: "varchar" }], data: [["internal-secret-value"]], stats: { state: "FINISHED" } }))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

describe.skipIf(!hasPostgres)("egress of a cloud gateway with SP_EGRESS_ALLOW_LOOPBACK=true", () => {
  let idp: IdentityProvider
  let database: TestDatabase
  let gateway: Gateway
  let internal: Awaited<ReturnType<typeof startInternalService>>
  const fakes: Array<TrinoFake> = []
  let admin: string

  beforeAll(async () => {
    idp = await startIdentityProvider()
    database = await createTestDatabase()
    internal = await startInternalService()
    gateway = await startApp({
      databaseUrl: database.url,
      env: { SP_DEPLOYMENT_MODE: "cloud", SP_JWKS_URL: idp.jwksUrl, SP_EGRESS_ALLOW_LOOPBACK: "true", SP_RATE_LIMIT_AUTH_RPM: "10000" }
    })
    admin = await idp.token({ sub: "user_egress", orgId: "org_egress_http", admin: true })
  })
  afterAll(async () => {
    await gateway?.stop()
    await Promise.all(fakes.map((f) => f.close()))
    await internal?.close()
    await database?.drop()
    await idp?.close()
  })

  const api = (path: string, body?: unknown) => request(gateway.url, path, { headers: { authorization: `Bearer ${admin}` }, ...(body === undefined ? {} : { body }) })

  it("the store's port is refused under every spelling of a loopback address", async () => {
    const storePort = Number(new URL(database.url).port || 5432)
    for (const host of ["::ffff:7f00:1", "[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "2130706433", "0x7f.1", "127.1", "127.0.0.2", "0.0.0.0", "::"]) {
      const probe = await api("/api/connections/test-credentials", {
        name: "probe", db_type: "postgresql", host, port: storePort, database: database.name, username: "root"
      })
      expect(probe.json, host).toMatchObject({ ok: false, step: "config" })
      expect(probe.json.error, host).toContain("own store")
    }
  })

  it("a host that is a socket path is refused: pg would dial the store's own unix socket", async () => {
    const storePort = Number(new URL(database.url).port || 5432)
    for (const host of ["/var/run/postgresql", "/tmp"]) {
      const probe = await api("/api/connections/test-credentials", {
        name: "probe", db_type: "postgresql", host, port: storePort, database: database.name, username: "root"
      })
      expect(probe.json, host).toMatchObject({ ok: false, step: "config" })
      expect(probe.json.error, host).toContain("a socket path is not a network address")
    }
  })

  const trinoQuery = async (name: string, fake: TrinoFake, sql = "select 1") => {
    const created = await api("/api/connections", { name, db_type: "trino", host: "127.0.0.1", port: fake.port, username: "tenant" })
    expect(created.status, created.text).toBe(201)
    return api("/api/query", { connection_name: name, sql })
  }

  it("a Trino server's nextUri to another address is refused, not fetched", async () => {
    const fake = await startTrinoFake({ nextUriOrigin: internal.origin })
    fakes.push(fake)
    const res = await trinoQuery("hostile-next", fake)
    expect(res.status, res.text).toBeGreaterThanOrEqual(400)
    expect(res.text).not.toContain("internal-secret-value")
    expect(res.json.message).toMatch(/only follows the connection's own server/)
    expect(fake.statements).toHaveLength(1)
    expect(internal.hits).toEqual([])
  })

  it("a Trino server's redirect is not followed", async () => {
    const fake = await startTrinoFake({ redirectTo: internal.origin })
    fakes.push(fake)
    const res = await trinoQuery("hostile-redirect", fake)
    expect(res.status, res.text).toBeGreaterThanOrEqual(400)
    expect(res.text).not.toContain("internal-secret-value")
    expect(fake.statements).toHaveLength(1)
    expect(internal.hits).toEqual([])
  })

  it("an honest Trino server still answers", async () => {
    const fake = await startTrinoFake()
    fakes.push(fake)
    const res = await trinoQuery("honest", fake, "SELECT n FROM UNNEST(sequence(1, 25)) AS t(n)")
    expect(res.status, res.text).toBe(200)
    expect(res.json.rows).toHaveLength(25)
  })
})
