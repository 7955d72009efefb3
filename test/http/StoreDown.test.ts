import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { createTestDatabase, postgresAvailable, TEST_PG_URL, type TestDatabase } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A TCP forwarder to PostgreSQL that can be cut (every live socket destroyed, new ones dropped) and restored. */
const startCuttableProxy = async (target: { host: string; port: number }) => {
  const live = new Set<net.Socket>()
  let cut = false
  const track = (socket: net.Socket) => {
    live.add(socket)
    socket.on("close", () => live.delete(socket))
    socket.on("error", () => socket.destroy())
  }
  const server = net.createServer((client) => {
    track(client)
    if (cut) {
      client.destroy()
      return
    }
    const upstream = net.connect(target.port, target.host)
    track(upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    client.on("close", () => upstream.destroy())
    upstream.on("close", () => client.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  return {
    port: (server.address() as net.AddressInfo).port,
    live: () => live.size,
    cut: () => {
      cut = true
      for (const socket of live) socket.destroy()
    },
    restore: () => {
      cut = false
    },
    close: () =>
      new Promise<void>((resolve) => {
        cut = true
        for (const socket of live) socket.destroy()
        server.close(() => resolve())
      })
  }
}
type Proxy = Awaited<ReturnType<typeof startCuttableProxy>>

describe.skipIf(!hasPostgres)("the store goes away under a running gateway", () => {
  let database: TestDatabase
  let proxy: Proxy
  let gateway: Gateway
  let admin: string
  const madeUp = `sp_${"ab12".repeat(8)}`

  beforeAll(async () => {
    database = await createTestDatabase()
    const pg = new URL(TEST_PG_URL)
    proxy = await startCuttableProxy({ host: pg.hostname, port: Number(pg.port || 5432) })
    const viaProxy = new URL(database.url)
    viaProxy.hostname = "127.0.0.1"
    viaProxy.port = String(proxy.port)
    gateway = await startApp({ databaseUrl: viaProxy.toString() })
    admin = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
    await proxy?.close()
    await database?.drop()
  })

  it("503 unavailable (never 401) while it is cut, /health stays 200, and it recovers once restored", async () => {
    const before = await request(gateway.url, "/api/keys", { key: admin })
    expect(before.status).toBe(200)
    expect(proxy.live()).toBeGreaterThan(0)
    const unknown = await request(gateway.url, "/api/keys", { key: madeUp })
    expect([unknown.status, unknown.json.code]).toEqual([401, "invalid_api_key"])

    proxy.cut()
    for (let round = 0; round < 3; round++) {
      for (const key of [admin, madeUp]) {
        const started = Date.now()
        const res = await request(gateway.url, "/api/keys", { key })
        expect(res.status, `${key === admin ? "local key" : "made-up key"}: ${res.text}`).toBe(503)
        expect(res.json.code).toBe("unavailable")
        expect(Object.keys(res.json).sort()).toEqual(["code", "message"])
        expect(res.text).not.toMatch(/ECONN|terminat|Connection|pg_|SqlError/)
        expect(Date.now() - started).toBeLessThan(10_000)
      }
      const health = await request(gateway.url, "/health")
      expect([health.status, health.json]).toEqual([200, { status: "healthy" }])
    }
    const plan = await request(gateway.url, "/api/plan", { key: admin })
    expect([plan.status, plan.json.code]).toEqual([503, "unavailable"])

    proxy.restore()
    const deadline = Date.now() + 10_000
    let after = await request(gateway.url, "/api/keys", { key: admin })
    while (after.status !== 200 && Date.now() < deadline) {
      expect(after.status).toBe(503)
      await sleep(200)
      after = await request(gateway.url, "/api/keys", { key: admin })
    }
    expect(after.status, after.text).toBe(200)
    expect((await request(gateway.url, "/api/plan", { key: admin })).status).toBe(200)
    const again = await request(gateway.url, "/api/keys", { key: madeUp })
    expect([again.status, again.json.code]).toEqual([401, "invalid_api_key"])
    expect(gateway.running()).toBe(true)
  })
})
