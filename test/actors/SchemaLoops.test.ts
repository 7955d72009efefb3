import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Eventually"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

describe("the schema loops: refresh past the interval, run due watches", () => {
  let gateway: Gateway
  let store: TestDatabase
  let customer: TestDatabase
  let key: string

  beforeAll(async () => {
    if (skip) return
    ;[store, customer] = await Promise.all([createTestDatabase(), createTestDatabase()])
    await customer.query("create table orders (id int primary key)")
    // The store is a PostgreSQL the test can reach, to age snapshots and watch runs instead of waiting.
    gateway = await startApp({ databaseUrl: store.url, env: { SP_SCHEMA_LOOP_SECONDS: "1" } })
    key = await localKey(gateway)
    const connection = { name: "db", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: customer.name, username: "root", schema_refresh_interval: 3600 }
    expect((await request(gateway.url, "/api/connections", { key, body: connection })).status).toBe(201)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await Promise.all([store?.drop(), customer?.drop()])
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key, ...options })

  it.skipIf(skip)("a snapshot older than its connection's interval is rescanned by the loop, and the change recorded", async () => {
    expect((await api("/api/connections/db/schema")).json.version).toBe(1)
    await customer.query("alter table orders add column total numeric")
    // Not due yet: an hour's interval.
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect((await api("/api/connections/db/schema/diff-history")).json.items).toEqual([])
    await store.query("update schema_snapshots set scanned_at = now() - interval '2 hours'")
    const changes = await eventually(() => api("/api/schema/changes"), (res) => res.json.items.length === 1, "the loop's rescan")
    expect(changes.json.items[0]).toMatchObject({ connection: "db", from_version: 1, to_version: 2 })
    expect(changes.json.items[0].diff.changed_tables[0]).toMatchObject({ table: "public.orders", added_columns: [{ name: "total", type: "numeric" }] })
  })

  it.skipIf(skip)("a connection whose scan fails is tried once per interval, not on every tick", async () => {
    const doomed = await createTestDatabase()
    await doomed.query("create table t (id int)")
    const body = { name: "gone", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: doomed.name, username: "root", schema_refresh_interval: 3600 }
    expect((await api("/api/connections", { body })).status).toBe(201)
    expect((await api("/api/connections/gone/schema")).status).toBe(200)
    await doomed.drop()
    await store.query("update schema_snapshots set scanned_at = now() - interval '2 hours' where connection_id = (select id from connections where name = 'gone')")
    const failed = await eventually(() => api("/api/connections/gone/schema/refresh-status"), (res) => res.json.state === "failed", "the failed rescan")
    expect(failed.json.error).toBeTruthy()
    await new Promise((resolve) => setTimeout(resolve, 3_500))
    expect((await api("/api/connections/gone/schema/refresh-status")).json.started_at).toBe(failed.json.started_at)
  })

  it.skipIf(skip)("a new watch is run by the loop at once for its baseline, and again once its interval has passed", async () => {
    const watch = (await api("/api/schema-watches", { body: { connection: "db", interval_seconds: 600 } })).json
    const baseline = await eventually(() => api(`/api/schema-watches/${watch.id}`), (res) => res.json.last_run_at !== null, "the first run")
    expect(baseline.json).toMatchObject({ last_version: 2, last_error: null, events: [] })
    await customer.query("create table refunds (id int)")
    await store.query("update schema_watches set last_run_at = now() - interval '1 hour'")
    const ran = await eventually(() => api(`/api/schema-watches/${watch.id}`), (res) => res.json.events.length === 1, "the watch's second run")
    expect(ran.json.events[0]).toMatchObject({ from_version: 2, to_version: 3, diff: { added_tables: ["public.refunds"] } })
  })
})
