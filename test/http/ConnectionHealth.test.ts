import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, freePort, tempDataDir } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { eventually } from "../support/Eventually"
import { request, type RequestOptions } from "../support/Http"
import { Relay } from "../support/Relay"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

describe("connection health on a PostgreSQL store", () => {
  let store: TestDatabase
  let target: TestDatabase
  let relay: Relay
  let gateway: Gateway
  const dataDir = tempDataDir()

  const start = () => startApp({ databaseUrl: store.url, dataDir, env: { SP_HEALTH_INTERVAL_SECONDS: "1" } })
  // Loopback without a key is the local admin on a self-hosted gateway.
  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, options)
  const healthOf = async (name: string) => (await api(`/api/connections/${name}/health`)).json

  beforeAll(async () => {
    if (skip) return
    store = await createTestDatabase()
    target = await createTestDatabase()
    relay = new Relay(await freePort())
    await relay.open()
    gateway = await start()
    const pg = (name: string, port: number) => ({ name, db_type: "postgresql", host: "127.0.0.1", port, database: target.name, username: "root" })
    for (const body of [pg("steady", 5432), pg("flaky", relay.port), pg("down", await freePort())]) {
      expect((await api("/api/connections", { body })).status).toBe(201)
    }
  })
  afterAll(async () => {
    await gateway?.stop()
    await relay?.cut()
    await store?.drop()
    await target?.drop()
  })

  it.skipIf(skip)("the loop pings every connection: healthy, unhealthy with the failing step, degraded after an outage it recovered from", async () => {
    const steady = await eventually(() => healthOf("steady"), (h) => h.checks >= 2, "checks of steady")
    expect(steady).toMatchObject({ name: "steady", db_type: "postgresql", status: "healthy", error_rate: 0, last_error: null, window_minutes: 60 })
    expect(steady.p50_ms).toBeGreaterThan(0)
    expect(steady.p95_ms).toBeGreaterThanOrEqual(steady.p50_ms)

    const down = await eventually(() => healthOf("down"), (h) => h.checks >= 1, "checks of down")
    expect(down).toMatchObject({ status: "unhealthy", error_rate: 1, p50_ms: null })
    expect(down.last_error).toMatchObject({ step: "tcp" })
    expect(down.last_error.message).toMatch(/could not be reached/)

    await eventually(() => healthOf("flaky"), (h) => h.status === "healthy", "flaky healthy")
    await relay.cut()
    await eventually(() => healthOf("flaky"), (h) => h.status === "unhealthy", "flaky unhealthy during the cut")
    await relay.open()
    const recovered = await eventually(() => healthOf("flaky"), (h) => h.status === "degraded", "flaky degraded after the cut")
    expect(recovered.error_rate).toBeGreaterThan(0)
    expect(recovered.error_rate).toBeLessThan(1)
    expect(recovered.last_error).not.toBeNull()

    const all = await api("/api/connections/health")
    expect(all.status).toBe(200)
    expect(all.json.items.map((h: { name: string; status: string }) => [h.name, h.status])).toEqual([
      ["down", "unhealthy"],
      ["flaky", "degraded"],
      ["steady", "healthy"]
    ])
    // A narrower window can leave the outage behind.
    expect((await api("/api/connections/flaky/health?window_minutes=1")).json.window_minutes).toBe(1)
  })

  it.skipIf(skip)("history pages newest first; stats sum up the org", async () => {
    const first = await api("/api/connections/steady/health/history?limit=2")
    expect(first.status).toBe(200)
    expect(first.json.items).toHaveLength(2)
    expect(first.json.items[0]).toEqual({ checked_at: expect.any(String), ok: true, latency_ms: expect.any(Number), step: null, error: null })
    expect(Date.parse(first.json.items[0].checked_at)).toBeGreaterThan(Date.parse(first.json.items[1].checked_at))
    const second = await api(`/api/connections/steady/health/history?limit=2&cursor=${first.json.next_cursor}`)
    expect(Date.parse(second.json.items[0].checked_at)).toBeLessThan(Date.parse(first.json.items[1].checked_at))

    // The loop's pings hold no pool open; a person's Test opens the pool the queries that follow will use.
    expect((await api("/api/connections/stats")).json.open_pools).toBe(0)
    expect((await api("/api/connections/steady/test", { method: "POST" })).json).toMatchObject({ ok: true })
    const stats = await api("/api/connections/stats")
    expect(stats.status).toBe(200)
    expect(stats.json).toMatchObject({
      connections: 3,
      by_db_type: { postgresql: 3 },
      by_status: { healthy: 1, degraded: 1, unhealthy: 1, unknown: 0 }
    })
    expect(stats.json.checks).toBeGreaterThan(5)
    expect(stats.json.error_rate).toBeGreaterThan(0)
    expect(stats.json.open_pools).toBe(1)
  })

  it.skipIf(skip)("bad input is refused; deleting a connection removes its history; checks past 7 days are pruned", async () => {
    expect((await api("/api/connections/health?window_minutes=0")).status).toBe(400)
    expect((await api("/api/connections/health?window_minutes=99999")).json.message).toContain("window_minutes")
    expect((await api("/api/connections/nope/health")).status).toBe(404)
    expect((await api("/api/connections/nope/health/history")).status).toBe(404)
    expect((await api("/api/connections/steady/health/history?cursor=bogus")).status).toBe(400)
    const reserved = await api("/api/connections", { body: { name: "health", db_type: "sqlite", database: "x.db" } })
    expect(reserved.status).toBe(400)
    expect(reserved.json.message).toContain("reserved")

    expect((await api("/api/connections/down", { method: "DELETE" })).status).toBe(204)
    const gone = await store.query<{ n: number }>(
      "select count(*)::int as n from connection_health_events e where not exists (select 1 from connections c where c.id = e.connection_id)"
    )
    expect(gone[0]!.n).toBe(0)

    const id = (await store.query<{ id: string }>("select id from connections where name = 'steady'"))[0]!.id
    await store.query(
      "insert into connection_health_events (org_id, connection_id, checked_at, ok, latency_ms) select org_id, id, now() - interval '8 days', true, 1 from connections where id = $1",
      [id]
    )
    await gateway.stop()
    gateway = await start()
    await eventually(
      () => store.query<{ n: number }>("select count(*)::int as n from connection_health_events where checked_at < now() - interval '7 days'"),
      (rows) => rows[0]!.n === 0,
      "the 8-day-old check to be pruned"
    )
  })
})

describe("a person's Test counts as a health check", () => {
  let target: TestDatabase
  let gateway: Gateway

  beforeAll(async () => {
    if (skip) return
    target = await createTestDatabase()
    // The loop's next round is an hour away: only the Test can tell the connection's health.
    gateway = await startApp({ env: { SP_HEALTH_INTERVAL_SECONDS: "3600" } })
  })
  afterAll(async () => {
    await gateway?.stop()
    await target?.drop()
  })

  it.skipIf(skip)("a new connection is unknown until tested, then healthy; a failing test records the failing step", async () => {
    const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, options)
    const body = (name: string, port: number) => ({ name, db_type: "postgresql", host: "127.0.0.1", port, database: target.name, username: "root" })
    expect((await api("/api/connections", { body: body("fresh", 5432) })).status).toBe(201)
    expect((await api("/api/connections", { body: body("closed", await freePort()) })).status).toBe(201)
    expect((await api("/api/connections/fresh/health")).json).toMatchObject({ status: "unknown", checks: 0 })

    expect((await api("/api/connections/fresh/test", { method: "POST" })).json).toMatchObject({ ok: true })
    expect((await api("/api/connections/fresh/health")).json).toMatchObject({ status: "healthy", checks: 1, last_error: null })

    expect((await api("/api/connections/closed/test", { method: "POST" })).json).toMatchObject({ ok: false, step: "tcp" })
    const closed = (await api("/api/connections/closed/health")).json
    expect(closed).toMatchObject({ status: "unhealthy", checks: 1 })
    expect(closed.last_error).toMatchObject({ step: "tcp" })
  })
})

describe("the health loop holds no database session per connection", () => {
  let target: TestDatabase
  let gateway: Gateway
  const CONNECTIONS = 30

  beforeAll(async () => {
    if (skip) return
    target = await createTestDatabase()
    gateway = await startApp({ env: { SP_HEALTH_INTERVAL_SECONDS: "1" } })
  })
  afterAll(async () => {
    await gateway?.stop()
    await target?.drop()
  })

  const backends = async () =>
    (await target.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where application_name = 'sluice' and datname = $1", [target.name]))[0]!.n

  it.skipIf(skip)(`${CONNECTIONS} connections to one server: a round pings them a couple at a time and leaves no backend open`, async () => {
    const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, options)
    for (let i = 0; i < CONNECTIONS; i++) {
      const body = { name: `db${i}`, db_type: "postgresql", host: "127.0.0.1", port: 5432, database: target.name, username: "root" }
      expect((await api("/api/connections", { body })).status).toBe(201)
    }
    let most = 0
    let watching = true
    const watch = (async () => {
      while (watching) {
        most = Math.max(most, await backends())
        await new Promise((r) => setTimeout(r, 10))
      }
    })()
    // Two full rounds: every connection checked twice.
    await eventually(() => api("/api/connections/stats"), (stats) => stats.json.checks >= 2 * CONNECTIONS, "two rounds of checks", 60_000)
    watching = false
    await watch
    const stats = (await api("/api/connections/stats")).json
    expect(stats.by_status).toMatchObject({ healthy: CONNECTIONS })
    expect(stats.open_pools).toBe(0)
    // At most two pings at once per server, each on a connection of its own that is closed after it (a backend may outlive its client by a moment).
    expect(most).toBeGreaterThan(0)
    expect(most).toBeLessThanOrEqual(3)
    await eventually(backends, (n) => n === 0, "no backend left open after the round", 2_000)
  })
})
