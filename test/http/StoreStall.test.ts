import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Eventually"
import { freePort, type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { type HttpResult, request } from "../support/Http"
import { Relay } from "../support/Relay"
import { createTestDatabase, postgresAvailable, redisAvailable, TEST_REDIS_URL, type TestDatabase } from "../support/Servers"

const hasServers = (await postgresAvailable()) && (await redisAvailable())
const DEADLINE_SECONDS = 1

/** A request that has not answered within `ms` counts as hung (status 0), so a hang fails the test instead of timing it out. */
const timed = async (path: string, gateway: Gateway, key: string | null, ms = 8_000) => {
  const started = Date.now()
  const hung = new Promise<HttpResult>((resolve) => setTimeout(() => resolve({ status: 0, headers: {}, text: "hung", json: {} }), ms).unref())
  const res = await Promise.race([request(gateway.url, path, { key }), hung])
  return { ...res, ms: Date.now() - started }
}

describe.skipIf(!hasServers)("a store or Redis that accepts and never answers", () => {
  let database: TestDatabase
  let store: Relay
  let redis: Relay
  let gateway: Gateway
  let key: string

  beforeAll(async () => {
    database = await createTestDatabase()
    const pg = new URL(database.url)
    store = new Relay(await freePort(), { host: pg.hostname, port: Number(pg.port || 5432) })
    const r = new URL(TEST_REDIS_URL)
    redis = new Relay(await freePort(), { host: r.hostname, port: Number(r.port || 6379) })
    await Promise.all([store.open(), redis.open()])
    pg.hostname = "127.0.0.1"
    pg.port = String(store.port)
    gateway = await startApp({
      databaseUrl: pg.toString(),
      env: { REDIS_URL: `redis://127.0.0.1:${redis.port}`, SP_STORE_TIMEOUT_SECONDS: String(DEADLINE_SECONDS) }
    })
    key = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
    await Promise.all([store?.cut(), redis?.cut()])
    await database?.drop()
  })

  // GET /api/connections is the readiness probe the README names: authenticated, and it needs the store and Redis.
  const expectStalledThenRecovered = async (relay: Relay) => {
    expect((await timed("/api/connections", gateway, key)).status).toBe(200)
    relay.blackhole()
    // Many requests at once: each fails within the deadline of its own work and its audit row's, however many rows wait.
    const many = await Promise.all(Array.from({ length: 40 }, () => timed("/api/connections", gateway, key)))
    expect(new Set(many.map((r) => r.status))).toEqual(new Set([503]))
    expect(Math.max(...many.map((r) => r.ms))).toBeLessThan(DEADLINE_SECONDS * 1000 * 4)
    for (let round = 0; round < 3; round++) {
      const ready = await timed("/api/connections", gateway, key)
      expect([ready.status, ready.json.code], ready.text).toEqual([503, "unavailable"])
      expect(ready.ms).toBeLessThan(DEADLINE_SECONDS * 1000 * 4)
      const health = await timed("/health", gateway, null)
      expect([health.status, health.json]).toEqual([200, { status: "healthy" }])
      expect(health.ms).toBeLessThan(500)
    }
    await relay.pass()
    await eventually(() => timed("/api/connections", gateway, key), (r) => r.status === 200, "readiness after the route is back", 10_000, 200)
    expect(gateway.running()).toBe(true)
    // A statement cut by the deadline fails its request as 503, not as an internal error (a defect logged).
    expect(gateway.logs()).not.toContain("request failed")
  }

  it("a stalled store: 503 within the deadline, /health stays up, readiness says no, and it recovers by itself", () =>
    expectStalledThenRecovered(store))

  it("a stalled Redis: the same", () => expectStalledThenRecovered(redis))
})
