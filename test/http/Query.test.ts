import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, mysqlAvailable, mysqlConnection, postgresAvailable, type TestDatabase } from "../support/Servers"

const servers = { postgres: await postgresAvailable(), mysql: await mysqlAvailable() }
const skip = !servers.postgres || !servers.mysql

describe("POST /api/query: governed read-only SQL over HTTP", () => {
  let gateway: Gateway
  let admin: string
  let querier: string
  let reader: string
  let database: TestDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table orders (id int primary key, total numeric, note text)")
    await database.query("insert into orders select g, g * 1.5, 'order ' || g from generate_series(1, 25) g")
    await database.query("create schema hr")
    await database.query("create table hr.salaries (id int, amount int)")
    await database.query("create table secrets (id int)")
    gateway = await startApp({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" } })
    admin = await localKey(gateway)
    querier = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "querier", scopes: ["query"] } })).json.key
    reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "reader", scopes: ["read"] } })).json.key
    const base = { db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: { name: "pg", ...base } })).status).toBe(201)
    const governed = { name: "pg_governed", ...base, blocked_tables: ["secrets", "hr.*"] }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: governed })).status).toBe(201)
    const allowList = { name: "pg_allow", ...base, allowed_tables: ["public.orders"] }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: allowList })).status).toBe(201)
    const mysql = mysqlConnection("maria")
    expect((await request(gateway.url, "/api/connections", { key: admin, body: mysql })).status).toBe(201)
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const query = (body: Record<string, unknown>, options: RequestOptions = {}) =>
    request(gateway.url, "/api/query", { key: querier, body, ...options })
  const auditOf = async (requestId: unknown) => {
    const logs = await request(gateway.url, "/api/audit?event_type=query&limit=100", { key: admin })
    return logs.json.items.find((row: { request_id: string }) => row.request_id === requestId)
  }

  it.skipIf(skip)("returns rows with columns, the tables read, and an exact completeness signal", async () => {
    const all = await query({ connection_name: "pg", sql: "select id, total, note from orders order by id" })
    expect(all.status).toBe(200)
    expect(all.json).toMatchObject({
      row_count: 25,
      completeness: "complete",
      truncated_at: null,
      cached: false,
      pii_masked: [],
      tables: ["orders"],
      columns: [
        { name: "id", type: "int4", nullable: null },
        { name: "total", type: "numeric", nullable: null },
        { name: "note", type: "text", nullable: null }
      ]
    })
    expect(all.json.rows[0]).toEqual([1, "1.5", "order 1"])
    expect(all.json.query_id).toMatch(/^[0-9a-f-]{36}$/)

    const capped = await query({ connection_name: "pg", sql: "select id from orders order by id", row_limit: 10 })
    expect(capped.json).toMatchObject({ row_count: 10, completeness: "truncated", truncated_at: 10 })
    expect(capped.json.rows.at(-1)).toEqual([10])

    // Exactly at the cap is complete: the sentinel row is what tells the two apart.
    const exact = await query({ connection_name: "pg", sql: "select id from orders where id <= 10", row_limit: 10 })
    expect(exact.json).toMatchObject({ row_count: 10, completeness: "complete" })

    // A smaller limit of the caller's own is kept, with its OFFSET.
    const own = await query({ connection_name: "pg", sql: "select id from orders order by id limit 3 offset 4", row_limit: 10 })
    expect(own.json).toMatchObject({ row_count: 3, completeness: "complete", rows: [[5], [6], [7]] })
    const larger = await query({ connection_name: "pg", sql: "select id from orders order by id limit 20 -- trailing comment", row_limit: 10 })
    expect(larger.json).toMatchObject({ row_count: 10, completeness: "truncated" })

    const maria = await query({ connection_name: "maria", sql: "SELECT 1 AS a UNION ALL SELECT 2 UNION ALL SELECT 3", row_limit: 2 })
    expect(maria.status).toBe(200)
    expect(maria.json).toMatchObject({ row_count: 2, completeness: "truncated", columns: [{ name: "a" }] })
  })

  it.skipIf(skip)("runs under the caller's attribution, visible to the database's own activity view", async () => {
    // pg_stat_activity is refused to queries (other sessions' SQL): the test reads it as the database's owner while the query runs.
    const running = query({ connection_name: "pg", sql: "select count(*) from generate_series(1, 20000000)" })
    let seen: Array<{ query: string }> = []
    for (let i = 0; i < 100 && seen.length === 0; i++) {
      seen = await database.query("select query from pg_stat_activity where datname = $1 and query like '%generate_series(1, 20000000)%' and pid <> pg_backend_pid()", [database.name])
      await new Promise((r) => setTimeout(r, 20))
    }
    const answered = await running
    expect(answered.status).toBe(200)
    expect(seen[0]?.query).toMatch(new RegExp(`^/\\* sluice key=${querier.slice(0, 11)} org=\\S+ request=${answered.headers["x-request-id"]} \\*/`))
  })

  it.skipIf(skip)("refuses writes and side doors with query_blocked and a reason, audits them, and changes nothing", async () => {
    const attempts: Array<[string, RegExp]> = [
      ["delete from orders", /DELETE is not a read/],
      ["with gone as (delete from orders returning *) select * from gone", /DELETE is not a read/],
      ["select * into orders_copy from orders", /INTO/],
      ["select * from orders for update", /locking clause/],
      ["select 1; delete from orders", /more than one statement/],
      ["select pg_sleep(10)", /pg_sleep is never allowed/],
      ["select set_config('default_transaction_read_only', 'off', false)", /set_config is never allowed/],
      ["select * from dblink('host=x', 'delete from orders') as t(a int)", /dblink is never allowed/],
      ["explain analyze delete from orders", /EXPLAIN ANALYZE|DELETE/],
      ["selec 1", /does not parse as PostgreSQL/],
      ["copy orders to '/tmp/x'", /COPY is not a read/]
    ]
    for (const [sql, reason] of attempts) {
      const refused = await query({ connection_name: "pg", sql })
      expect([refused.status, refused.json.code], sql).toEqual([400, "query_blocked"])
      expect(refused.json.reason, sql).toMatch(reason)
      expect(refused.json.message).toContain(refused.json.reason)
    }
    expect((await database.query<{ n: number }>("select count(*)::int as n from orders"))[0]!.n).toBe(25)
    expect(await database.query("select 1 from information_schema.tables where table_name = 'orders_copy'")).toHaveLength(0)

    const refused = await query({ connection_name: "pg", sql: "delete from orders where note = 'order 1'" })
    const row = await auditOf(refused.headers["x-request-id"])
    expect(row).toMatchObject({
      event_type: "query",
      outcome: "refused",
      block_reason: "query_blocked",
      connection: "pg",
      status: 400,
      sql: "delete from orders where note = '?'",
      details: { reason: "DELETE is not a read", tables: [] }
    })
  })

  it.skipIf(skip)("a refusal's audit row never quotes the statement's values, which keys that may not see data read; its caller is told where the parser stopped", async () => {
    const atCharacter = /^the statement does not parse as PostgreSQL at character \d+$/
    const attempts: Array<[string, string, RegExp]> = [
      ["pg", "select * from orders where note = 'ada@example.com' 'SECRET-4111'", atCharacter],
      ["pg", "'SECRET-4112' union select 1", atCharacter],
      ["pg", "select * from orders where id = 4113 4114", atCharacter],
      ["maria", "select * from t where note = 'SECRET-4115' 'x' !!", /^the statement does not parse as mysql at line 1, column \d+$/]
    ]
    for (const [connection, sql, recorded] of attempts) {
      const refused = await query({ connection_name: connection, sql })
      expect([refused.status, refused.json.code], sql).toEqual([400, "query_blocked"])
      // The caller wrote the statement: the parser's own words are for them.
      expect(refused.json.reason, sql).toMatch(/at or near "[^"]+"|found: \S+/)
      const row = await auditOf(refused.headers["x-request-id"])
      expect(row.details.reason, sql).toMatch(recorded)
      // Generated ids, times and durations are left out: a random UUID may hold "4114".
      const { id, timestamp, duration_ms, key_id, principal, request_id, details: { query_id, ...details }, ...written } = row
      expect(JSON.stringify({ ...written, details }), sql).not.toMatch(/SECRET|4113|4114/)
    }
  })

  it.skipIf(skip)("applies blocked tables and the allow-list on fully qualified names", async () => {
    const blocked: Array<[string, string, RegExp]> = [
      ["pg_governed", "select * from secrets", /secrets is blocked/],
      ["pg_governed", "select * from public.secrets", /blocked/],
      ["pg_governed", "select * from hr.salaries", /hr.salaries is blocked/],
      ["pg_governed", "select * from orders join hr.salaries s on s.id = orders.id", /blocked/],
      ["pg_governed", "select * from (select * from secrets) s", /blocked/],
      ["pg_governed", "with x as (select 1) select * from secrets, x", /blocked/],
      ["pg_allow", "select * from secrets", /not on this connection's allow-list/],
      ["pg_allow", "select * from hr.salaries", /not on this connection's allow-list/],
      // A CTE named like an allowed table does not hide a later reference to the real table.
      ["pg_allow", "with a as (select * from secrets), secrets as (select 1) select * from a", /allow-list/]
    ]
    for (const [connection, sql, reason] of blocked) {
      const refused = await query({ connection_name: connection, sql })
      expect([refused.status, refused.json.code], sql).toEqual([400, "query_blocked"])
      expect(refused.json.reason, sql).toMatch(reason)
    }
    const allowed = await query({ connection_name: "pg_allow", sql: "with o as (select * from orders) select count(*) from o" })
    expect(allowed.json).toMatchObject({ rows: [["25"]], tables: ["orders"] })
    const unaffected = await query({ connection_name: "pg_governed", sql: "select count(*) from public.orders" })
    expect(unaffected.json.rows).toEqual([["25"]])

    // An edit applies to the very next query on this replica (the target cache is dropped with it).
    const base = { db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    const edited = await request(gateway.url, "/api/connections/pg_governed", { key: admin, method: "PUT", body: { name: "pg_governed", ...base, blocked_tables: ["orders"] } })
    expect(edited.status).toBe(200)
    expect((await query({ connection_name: "pg_governed", sql: "select count(*) from secrets" })).status).toBe(200)
    expect((await query({ connection_name: "pg_governed", sql: "select count(*) from orders" })).json.code).toBe("query_blocked")
  })

  it.skipIf(skip)("serves a connection's results from the cache for its TTL, per row cap, until invalidated", async () => {
    const base = { db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: { name: "pg_cached", ...base, result_cache_ttl: 60 } })).status).toBe(201)
    const sql = "select count(*) as n from orders where total > 0"
    const first = await query({ connection_name: "pg_cached", sql })
    expect(first.json).toMatchObject({ cached: false, rows: [["25"]] })
    await database.query("insert into orders values (1000, 1, 'late')")
    const second = await query({ connection_name: "pg_cached", sql })
    expect(second.json).toMatchObject({ cached: true, rows: [["25"]], completeness: "complete" })
    expect(second.json.query_id).not.toBe(first.json.query_id)
    // Another cap is another entry; so is the same text on a connection without a TTL.
    expect((await query({ connection_name: "pg_cached", sql, row_limit: 5 })).json).toMatchObject({ cached: false, rows: [["26"]] })
    expect((await query({ connection_name: "pg", sql })).json).toMatchObject({ cached: false, rows: [["26"]] })

    const stats = await request(gateway.url, "/api/cache/stats", { key: reader })
    expect(stats.status).toBe(200)
    expect(stats.json).toMatchObject({ entries: 2, hits: 1 })
    expect(stats.json.misses).toBeGreaterThanOrEqual(2)

    expect((await request(gateway.url, "/api/cache/invalidate", { key: reader, body: {} })).status).toBe(403)
    const invalidated = await request(gateway.url, "/api/cache/invalidate", { key: admin, body: { connection_name: "pg_cached" } })
    expect(invalidated.json).toEqual({ invalidated: 2 })
    expect((await query({ connection_name: "pg_cached", sql })).json).toMatchObject({ cached: false, rows: [["26"]] })
    const missing = await request(gateway.url, "/api/cache/invalidate", { key: admin, body: { connection_name: "nope" } })
    expect(missing.status).toBe(404)

    // An edit of the connection drops its entries at once.
    expect((await query({ connection_name: "pg_cached", sql })).json.cached).toBe(true)
    await request(gateway.url, "/api/connections/pg_cached", { key: admin, method: "PUT", body: { name: "pg_cached", ...base, result_cache_ttl: 60, description: "edited" } })
    expect((await query({ connection_name: "pg_cached", sql })).json.cached).toBe(false)
    await database.query("delete from orders where id = 1000")
  })

  it.skipIf(skip)("explains a statement without running it, with estimates and a warning for a large full scan", async () => {
    await database.query("create table big as select g as id, md5(g::text) as h from generate_series(1, 200000) g; analyze big")
    const explain = (body: Record<string, unknown>) => request(gateway.url, "/api/query/explain", { key: querier, body })
    const plan = await explain({ connection_name: "pg", sql: "select * from big order by h" })
    expect(plan.status).toBe(200)
    expect(plan.json.estimated_rows).toBeGreaterThan(0)
    expect(plan.json.estimated_cost).toBeGreaterThan(0)
    expect(plan.json.warnings).toEqual([expect.stringMatching(/^full scan of big \(about \d+ rows\)$/)])
    expect(plan.json.scanned_rows).toBeGreaterThan(150_000)
    expect(plan.json.plan[0].Plan["Node Type"]).toBeDefined()
    expect(plan.json).toMatchObject({ tables: ["big"], sql: "select * from big order by h\nLIMIT 10001" })
    // The row cap stops a plain scan early: it reads about the rows it may return, and warns of nothing.
    const capped = await explain({ connection_name: "pg", sql: "select * from big" })
    expect(capped.json.scanned_rows).toBeLessThan(20_000)
    expect(capped.json.warnings).toEqual([])

    const indexed = await explain({ connection_name: "pg", sql: "select * from orders where id = 3" })
    expect(indexed.json.warnings).toEqual([])
    const maria = await explain({ connection_name: "maria", sql: "SELECT 1 AS a" })
    expect(maria.status).toBe(200)
    expect(typeof maria.json.plan).toBe("object")

    const blocked = await explain({ connection_name: "pg", sql: "delete from big" })
    expect([blocked.status, blocked.json.code]).toEqual([400, "query_blocked"])
    const notAQuery = await explain({ connection_name: "pg", sql: "show search_path" })
    expect([notAQuery.status, notAQuery.json.message]).toEqual([400, "Only a query has a plan to explain"])
    expect(await database.query("select count(*)::int as n from big")).toEqual([{ n: 200000 }])
    const logs = await request(gateway.url, "/api/audit?event_type=query_explain&limit=10", { key: admin })
    expect(logs.json.items.length).toBeGreaterThanOrEqual(4)
  })

  it.skipIf(skip)("cancels a statement on the server at its timeout", async () => {
    const started = Date.now()
    const slow = await query({
      connection_name: "pg",
      sql: "select count(*) from generate_series(1, 10000000000) a",
      timeout_seconds: 1
    })
    expect([slow.status, slow.json.code]).toEqual([504, "query_timeout"])
    expect(Date.now() - started).toBeLessThan(4_000)
    // Gone from the server within 1 s of the answer (the backend reports its new state a moment after the error it sends).
    const stillRunning = () =>
      database.query(
        "select 1 from pg_stat_activity where datname = $1 and state = 'active' and query like '%generate_series(1, 10000000000)%' and pid <> pg_backend_pid()",
        [database.name]
      )
    await expect.poll(stillRunning, { timeout: 1000, interval: 50 }).toHaveLength(0)
    const row = await auditOf(slow.headers["x-request-id"])
    expect(row).toMatchObject({ outcome: "error", status: 504 })
  })

  it.skipIf(skip)("refuses bad input with a clear error, a missing connection with 404, and a key without query scope", async () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ connection_name: "pg", sql: "   " }, /sql must not be empty/],
      [{ connection_name: "pg", sql: "select 1\u0000" }, /NUL/],
      [{ connection_name: "pg", sql: `select ${"1,".repeat(50_001)}1` }, /at most 100000 characters/],
      [{ connection_name: "pg", sql: "select 1", row_limit: 0 }, /row_limit/],
      [{ connection_name: "pg", sql: "select 1", row_limit: 100_001 }, /row_limit/],
      [{ connection_name: "pg", sql: "select 1", timeout_seconds: 301 }, /timeout_seconds/],
      [{ connection_name: "pg", sql: "select 1", database: "other" }, /database/],
      [{ sql: "select 1" }, /connection_name/]
    ]
    for (const [body, message] of bad) {
      const refused = await query(body)
      expect([refused.status, refused.json.code], JSON.stringify(body).slice(0, 80)).toEqual([400, "invalid_request"])
      expect(refused.json.message).toMatch(message)
    }
    const missing = await query({ connection_name: "nope", sql: "select 1" })
    expect([missing.status, missing.json.code]).toEqual([404, "not_found"])
    const noScope = await query({ connection_name: "pg", sql: "select 1" }, { key: reader })
    expect([noScope.status, noScope.json.code]).toEqual([403, "insufficient_scope"])
    const failed = await query({ connection_name: "pg", sql: "select * from no_such_table" })
    expect([failed.status, failed.json.code]).toEqual([400, "query_failed"])
    expect(failed.json.message).toMatch(/no_such_table/)
  })
})
