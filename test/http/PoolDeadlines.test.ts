import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { DuckDBInstance } from "@duckdb/node-api"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type GatewayProcess, localKey, startGateway } from "../support/Gateway"
import { request } from "../support/Http"
import { createMariaDatabase, createTestDatabase, type MariaDatabase, mysqlAvailable, mysqlConnection, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable()) || !(await mysqlAvailable())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** POST /api/query whose client hangs up after `afterMs`, mid-statement. */
const abandoned = (gateway: GatewayProcess, key: string, body: object, afterMs: number) =>
  new Promise<void>((resolve) => {
    const payload = JSON.stringify(body)
    const req = http.request(`${gateway.url}/api/query`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)), "x-api-key": key }
    })
    req.on("error", () => resolve())
    req.on("response", () => resolve())
    req.end(payload)
    setTimeout(() => {
      req.destroy()
      resolve()
    }, afterMs)
  })

/** Resolves with how long `work` took, or rejects once it passes `limitMs` (so a hang fails the test instead of the run). */
const timed = async <A>(limitMs: number, work: () => Promise<A>): Promise<{ value: A; ms: number }> => {
  const started = Date.now()
  const value = await Promise.race([work(), sleep(limitMs).then(() => Promise.reject(new Error(`still waiting after ${limitMs} ms`)))])
  return { value, ms: Date.now() - started }
}

const vmHwmKb = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1])

describe("pool waits inside the deadline, interrupted statements cancelled, results capped while read", () => {
  let gateway: GatewayProcess
  let querier: string
  let database: TestDatabase
  let maria: MariaDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    maria = await createMariaDatabase("sluice_pool")
    gateway = await startGateway({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" } })
    const admin = await localKey(gateway)
    querier = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "querier", scopes: ["query"] } })).json.key
    const duckFile = path.join(gateway.dataDir, "pool.duckdb")
    const duck = await DuckDBInstance.create(duckFile)
    const setup = await duck.connect()
    await setup.run("create table t (id int); insert into t values (1)")
    setup.closeSync()
    duck.closeSync()
    const liteFile = path.join(gateway.dataDir, "pool.sqlite")
    const lite = new Database(liteFile)
    lite.exec("create table t (id int); insert into t values (1)")
    lite.close()
    const connections = [
      { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" },
      mysqlConnection("maria", maria.name),
      // A short connect timeout, shorter than the wait for a busy pool below.
      { name: "pg_quick", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root", connection_timeout: 1 },
      { ...mysqlConnection("maria_quick", maria.name), connection_timeout: 1 },
      { name: "duck", db_type: "duckdb", database: duckFile },
      { name: "lite", db_type: "sqlite", database: liteFile }
    ]
    for (const body of connections) expect((await request(gateway.url, "/api/connections", { key: admin, body })).status).toBe(201)
  })
  afterAll(async () => {
    await gateway?.kill()
    await database?.drop()
    await maria?.drop()
  })

  const query = (body: Record<string, unknown>) => request(gateway.url, "/api/query", { key: querier, body })

  it.skipIf(skip)("MariaDB: clients that hang up mid-statement leave the pool usable, their statements killed on the server", async () => {
    const heavy = { connection_name: "maria", sql: "select count(*) from big a cross join big b cross join big c", timeout_seconds: 60 }
    await Promise.all(Array.from({ length: 6 }, () => abandoned(gateway, querier, heavy, 1_000)))
    const after = await timed(15_000, () => query({ connection_name: "maria", sql: "select 1 as one", timeout_seconds: 3 }))
    expect(after.value.status, after.value.text).toBe(200)
    expect(after.ms).toBeLessThan(3_000 + 2_500)
    const running = async () =>
      ((await maria.admin.query("select count(*) as n from information_schema.processlist where db = ? and info like '%cross join big%' and id <> connection_id()", [maria.name])) as any)[0][0].n
    const deadline = Date.now() + 5_000
    while ((await running()) > 0 && Date.now() < deadline) await sleep(100)
    expect(await running()).toBe(0)
  })

  it.skipIf(skip)("PostgreSQL: never more backends than the pool's size, and statements of clients that left are cancelled", async () => {
    const backends = async () =>
      (await database.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where application_name = 'sluice' and datname = $1", [database.name]))[0]!.n
    let most = 0
    let watching = true
    const watch = (async () => {
      while (watching) {
        most = Math.max(most, await backends())
        await sleep(20)
      }
    })()
    const heavy = { connection_name: "pg", sql: "select count(*) from generate_series(1, 3000000000) g", timeout_seconds: 60 }
    await Promise.all(Array.from({ length: 8 }, (_, i) => abandoned(gateway, querier, heavy, 600 + 100 * i)))
    await Promise.all(Array.from({ length: 8 }, () => abandoned(gateway, querier, heavy, 800)))
    // This test's database only: DatabaseFaults and DriverFaults run the same statement, maybe at the same time in the other worker.
    const active = async () =>
      (
        await database.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = $1 and state = 'active' and query like '%generate_series(1, 3000000000)%' and pid <> pg_backend_pid()",
          [database.name]
        )
      )[0]!.n
    const deadline = Date.now() + 5_000
    while ((await active()) > 0 && Date.now() < deadline) await sleep(100)
    const ok = await timed(15_000, () => query({ connection_name: "pg", sql: "select 1 as one", timeout_seconds: 3 }))
    watching = false
    await watch
    expect(await active()).toBe(0)
    expect(ok.value.status, ok.value.text).toBe(200)
    expect(most).toBeGreaterThan(0)
    expect(most).toBeLessThanOrEqual(4)
  })

  it.skipIf(skip)("PostgreSQL and MariaDB: waiting for a busy pool is bounded by timeout_seconds, not by the connect timeout", async () => {
    // The sleeps sit in views: the gate never lets a statement call them itself.
    await database.query("create view slow as select pg_sleep(2.5)::text as slept")
    await maria.admin.query(`create view ${maria.name}.slow as select sleep(2.5) as slept`)
    for (const name of ["pg_quick", "maria_quick"]) {
      const sql = "select slept from slow"
      // Twice the pool's size: half of them wait for a session about 2.5 s, past the connection's 1 s connect timeout.
      const answers = await Promise.all(Array.from({ length: 8 }, () => query({ connection_name: name, sql, timeout_seconds: 20 })))
      expect(answers.map((a) => (a.status === 200 ? 200 : `${a.status} ${a.json?.code}: ${a.json?.message}`)), name).toEqual(Array(8).fill(200))
    }
  })

  it.skipIf(skip)("DuckDB and SQLite: the wait for a connection counts against timeout_seconds", async () => {
    const slow = {
      duck: "select count(*) from generate_series(1, 100000) a, generate_series(1, 100000) b where a.generate_series + b.generate_series < 0",
      lite: "with recursive r(n) as (select 1 union all select n + 1 from r where n < 1000000000) select count(*) from r"
    }
    for (const [name, sql] of Object.entries(slow)) {
      const busy = Array.from({ length: name === "duck" ? 2 : 1 }, () => query({ connection_name: name, sql, timeout_seconds: 8 }))
      await sleep(500)
      const waited = await timed(15_000, () => query({ connection_name: name, sql: "select 1 as one", timeout_seconds: 2 }))
      expect([name, waited.value.status, waited.value.json?.code]).toEqual([name, 504, "query_timeout"])
      expect(waited.ms, name).toBeLessThan(2_000 + 1_500)
      await Promise.all(busy)
    }
  })

  it.skipIf(skip)("PostgreSQL: a result far over the size cap is refused while it is read, not after it is held", async () => {
    // Eight values of 480 MB each, made one row at a time (constants in a union would all be folded into the plan first).
    const huge = "select repeat('x', 480000000 + g) as v from generate_series(0, 7) g"
    const refused = await timed(50_000, () => query({ connection_name: "pg", sql: huge, timeout_seconds: 50 }))
    expect([refused.value.status, refused.value.json?.code]).toEqual([422, "result_too_large"])
    expect(vmHwmKb(gateway.process.pid!)).toBeLessThan(1_500 * 1024)
    const ok = await query({ connection_name: "pg", sql: "select 1 as one", timeout_seconds: 5 })
    expect([ok.status, ok.json.rows]).toEqual([200, [[1]]])
  })

  it.skipIf(skip)("shuts down promptly after all that", async () => {
    await timed(15_000, () => gateway.stop())
  })
})
