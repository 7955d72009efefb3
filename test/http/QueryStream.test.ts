import * as http from "node:http"
import * as path from "node:path"
import { DuckDBInstance } from "@duckdb/node-api"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type GatewayProcess, localKey, startGateway } from "../support/Gateway"
import { request } from "../support/Http"
import { createTestDatabase, mysqlAvailable, mysqlConnection, postgresAvailable, TEST_MYSQL_URL, type TestDatabase } from "../support/Servers"

const servers = { postgres: await postgresAvailable(), mysql: await mysqlAvailable() }
const skip = !servers.postgres || !servers.mysql
const NDJSON = "application/x-ndjson"

interface Streamed {
  readonly status: number
  readonly contentType: string
  readonly requestId: string
  /** The parsed document when the answer was not a stream (a refusal). */
  readonly json: any
  readonly head: any
  readonly rowCount: number
  readonly firstRows: Array<Array<unknown>>
  readonly lastRow: Array<unknown> | undefined
  readonly end: any
  readonly error: any
  /** With `whenRows`: the rows read by the time its action had finished. */
  readonly rowsWhenDone: number | undefined
}

/** Posts a query asking for NDJSON and reads the answer line by line, holding only a few rows. */
const streamQuery = (
  url: string,
  key: string,
  body: Record<string, unknown>,
  options: { pauseAfterBytes?: number; pauseMs?: number; abortAfterRows?: number; whenRows?: { count: number; run: () => Promise<unknown> } } = {}
): Promise<Streamed> =>
  new Promise((resolve, reject) => {
    const payload = JSON.stringify(body)
    const req = http.request(
      new URL("/api/query", url),
      { method: "POST", headers: { "content-type": "application/json", "x-api-key": key, accept: NDJSON, "content-length": Buffer.byteLength(payload) } },
      (res) => {
        const contentType = res.headers["content-type"] ?? ""
        const result = { head: undefined as any, end: undefined as any, error: undefined as any, rowCount: 0, firstRows: [] as Array<Array<unknown>> }
        let lastRow: Array<unknown> | undefined
        let buffered = ""
        let received = 0
        let paused = false
        let acted = false
        let rowsWhenDone: number | undefined
        const finish = (json: unknown) =>
          resolve({ status: res.statusCode ?? 0, contentType, requestId: String(res.headers["x-request-id"]), json, ...result, lastRow, rowsWhenDone })
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => {
          received += Buffer.byteLength(chunk)
          if (!contentType.includes(NDJSON)) return void (buffered += chunk)
          const lines = (buffered + chunk).split("\n")
          buffered = lines.pop()!
          for (const line of lines) {
            const parsed = JSON.parse(line)
            if (Array.isArray(parsed)) {
              result.rowCount++
              if (result.firstRows.length < 3) result.firstRows.push(parsed)
              lastRow = parsed
            } else if (parsed.type === "head") result.head = parsed
            else if (parsed.type === "end") result.end = parsed
            else if (parsed.type === "error") result.error = parsed
          }
          if (options.whenRows !== undefined && !acted && result.rowCount >= options.whenRows.count) {
            acted = true
            options.whenRows.run().then(() => (rowsWhenDone = result.rowCount), reject)
          }
          if (options.abortAfterRows !== undefined && result.rowCount >= options.abortAfterRows) {
            req.destroy()
            finish(undefined)
          }
          if (!paused && options.pauseAfterBytes !== undefined && received >= options.pauseAfterBytes) {
            paused = true
            res.pause()
            setTimeout(() => res.resume(), options.pauseMs ?? 1000)
          }
        })
        res.on("end", () => finish(contentType.includes(NDJSON) ? undefined : JSON.parse(buffered)))
        res.on("error", reject)
      }
    )
    req.on("error", (error) => (options.abortAfterRows !== undefined ? undefined : reject(error)))
    req.end(payload)
  })

describe("POST /api/query with Accept: application/x-ndjson: rows streamed as they are read", () => {
  let gateway: GatewayProcess
  let admin: string
  let querier: string
  let database: TestDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table customers (id int, email text, city text)")
    await database.query("insert into customers select g, 'user' || g || '@example.com', 'city ' || (g % 7) from generate_series(1, 5000) g")
    // A 192 MB heap: the gateway starts in about 95; the 1,000,000 rows below held whole run it out of memory (tried).
    gateway = await startGateway({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000", NODE_OPTIONS: "--max-old-space-size=192" } })
    admin = await localKey(gateway)
    querier = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "querier", scopes: ["query"] } })).json.key
    const pg = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: pg })).status).toBe(201)
    const pii = { rules: [{ table: "customers", column: "email", action: "mask" }] }
    expect((await request(gateway.url, "/api/connections/pg/pii", { method: "PUT", key: admin, body: pii })).status).toBe(200)
    const maria = mysqlConnection("maria")
    expect((await request(gateway.url, "/api/connections", { key: admin, body: maria })).status).toBe(201)
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const sessionsOfGateway = async () =>
    (
      await database.query(
        "select state, query from pg_stat_activity where datname = $1 and application_name = 'sluice' and state <> 'idle'",
        [database.name]
      )
    )
  const auditRows = async (requestId: string) => {
    const logs = await request(gateway.url, "/api/audit?limit=200", { key: admin })
    return logs.json.items.filter((row: { request_id: string }) => row.request_id === requestId)
  }

  it.skipIf(skip)("sends a 1,000,000-row capped result from a gateway whose heap could not hold it, then says it was truncated", { timeout: 180_000 }, async () => {
    // The client stops reading for 2 s after the first MiB: the gateway must wait rather than buffer the rest.
    const big = await streamQuery(
      gateway.url,
      querier,
      { connection_name: "pg", sql: "select g, md5(g::text) as digest from generate_series(1, 3000000) g", row_limit: 1_000_000, timeout_seconds: 300 },
      { pauseAfterBytes: 1024 * 1024, pauseMs: 2000 }
    ).catch((error: Error) => {
      // A reset means the gateway ended the response or died: what it logged says which.
      throw new Error(`${error.message}; gateway ${gateway.process.exitCode === null && gateway.process.signalCode === null ? "still running" : `ended (${gateway.process.exitCode ?? gateway.process.signalCode})`}; its log ends:\n${gateway.logs().slice(-4000)}`)
    })
    expect(big.status).toBe(200)
    expect(big.contentType).toContain(NDJSON)
    expect(big.head).toMatchObject({ type: "head", columns: [{ name: "g", type: "int4" }, { name: "digest", type: "text" }], cached: false, pii_masked: [] })
    expect(big.rowCount).toBe(1_000_000)
    expect(big.firstRows[0]).toEqual([1, "c4ca4238a0b923820dcc509a6f75849b"])
    expect(big.lastRow?.[0]).toBe(1_000_000)
    expect(big.end).toMatchObject({ type: "end", row_count: 1_000_000, completeness: "truncated", truncated_at: 1_000_000 })
    expect(big.error).toBeUndefined()
    expect((await request(gateway.url, "/health")).status).toBe(200)
    // The session is reset and pooled just after the response ends.
    await expect.poll(sessionsOfGateway, { timeout: 2000 }).toEqual([])
  })

  it.skipIf(skip)("a complete result says so, and the audit log has the query and how its stream ended", async () => {
    const done = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select id, city from customers order by id" })
    expect(done.end).toMatchObject({ row_count: 5000, completeness: "complete", truncated_at: null, budget: null })
    expect(done.head.tables).toEqual(["customers"])
    const rows = await auditRows(done.requestId)
    expect(rows.map((r: { event_type: string }) => r.event_type).sort()).toEqual(["query", "query_stream_end"])
    const end = rows.find((r: { event_type: string }) => r.event_type === "query_stream_end")
    expect(end).toMatchObject({ outcome: "success", rows: 5000, connection: "pg", details: { streamed: true, completeness: "complete", tables: ["customers"] } })
  })

  it.skipIf(skip)("masks PII row by row as it streams", async () => {
    const masked = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select c.email as contact, id from customers c order by id" })
    expect(masked.head.pii_masked).toEqual([{ column: "contact", rule: "mask" }])
    expect(masked.firstRows[0]).toEqual(["****.com", 1])
    expect(masked.rowCount).toBe(5000)
  })

  it.skipIf(skip)("refusals and a statement that fails before its first row are ordinary JSON errors; a later failure ends the stream with an error line", async () => {
    const blocked = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "delete from customers" })
    expect(blocked.status).toBe(400)
    expect(blocked.json).toMatchObject({ code: "query_blocked" })
    const failing = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select 1 / 0" })
    expect(failing.status).toBe(400)
    expect(failing.json).toMatchObject({ code: "query_failed" })
    // A relation the schema scan does not list, on a connection with PII rules, is refused before it reaches the database.
    const missing = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select * from nowhere" })
    expect(missing.status).toBe(400)
    expect(missing.json).toMatchObject({ code: "query_blocked", message: expect.stringContaining("there is no relation nowhere") })
    const tooMany = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select 1", row_limit: 1_000_001 })
    expect(tooMany.json).toMatchObject({ code: "invalid_request" })
    const buffered = await request(gateway.url, "/api/query", { key: querier, body: { connection_name: "pg", sql: "select 1", row_limit: 200_000 } })
    expect(buffered.status).toBe(400)
    expect(buffered.json.message).toContain("row_limit must be at most 100000 (1000000 when the result is streamed with Accept: application/x-ndjson)")

    const late = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select 1 / (20000 - g) as x from generate_series(1, 30000) g", row_limit: 50_000 })
    expect(late.status).toBe(200)
    expect(late.rowCount).toBeGreaterThan(0)
    expect(late.rowCount).toBeLessThan(20_000)
    expect(late.end).toBeUndefined()
    expect(late.error).toMatchObject({ type: "error", code: "query_failed" })
    expect(late.error.message).toContain("division by zero")
    const end = (await auditRows(late.requestId)).find((r: { event_type: string }) => r.event_type === "query_stream_end")
    expect(end).toMatchObject({ outcome: "error", rows: late.rowCount })
    // The session is reset and pooled just after the response ends.
    await expect.poll(sessionsOfGateway, { timeout: 2000 }).toEqual([])
  })

  it.skipIf(skip)("a client that goes away mid-stream stops the statement on the server, gives the connection back, and is charged what it read", async () => {
    const budget = (await request(gateway.url, "/api/budget", { key: admin, body: { session: "leaver", max_rows: 5_000_000 } })).json
    const gone = await streamQuery(
      gateway.url,
      querier,
      { connection_name: "pg", sql: "select g, repeat('x', 200) from generate_series(1, 5000000) g", row_limit: 1_000_000, timeout_seconds: 300, session: "leaver" },
      { abortAfterRows: 10_000 }
    )
    expect(gone.rowCount).toBeGreaterThanOrEqual(10_000)
    await expect.poll(sessionsOfGateway, { timeout: 5000 }).toEqual([])
    await expect
      .poll(async () => (await auditRows(gone.requestId)).find((r: { event_type: string }) => r.event_type === "query_stream_end"), { timeout: 5000 })
      .toMatchObject({ outcome: "error" })
    // One row for the request and one for how its stream ended, nothing more.
    const rows = await auditRows(gone.requestId)
    expect(rows.map((r: { event_type: string; outcome: string }) => [r.event_type, r.outcome]).sort()).toEqual([["query", "success"], ["query_stream_end", "error"]])
    await expect
      .poll(async () => (await request(gateway.url, `/api/budget/${budget.id}`, { key: admin })).json.used.rows, { timeout: 5000 })
      .toBeGreaterThanOrEqual(10_000)
    const again = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select 1 as one" })
    expect(again.end).toMatchObject({ row_count: 1, completeness: "complete" })
  })

  it.skipIf(skip)("a key deleted mid-stream stops receiving rows within about a second, the stream ends saying so, and the statement stops", { timeout: 180_000 }, async () => {
    const doomed = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "doomed", scopes: ["query"] } })).json
    const cut = await streamQuery(
      gateway.url,
      doomed.key,
      { connection_name: "pg", sql: "select g, repeat('x', 1000) from generate_series(1, 5000000) g", row_limit: 1_000_000, timeout_seconds: 300 },
      { whenRows: { count: 10_000, run: () => request(gateway.url, `/api/keys/${doomed.id}`, { method: "DELETE", key: admin }) } }
    )
    expect(cut.status).toBe(200)
    expect(cut.rowsWhenDone).toBeDefined()
    // What left the gateway in the second or so before its next check, a small part of the million rows.
    expect(cut.rowCount - cut.rowsWhenDone!).toBeLessThan(300_000)
    expect(cut.end).toBeUndefined()
    expect(cut.error).toMatchObject({ type: "error", code: "invalid_api_key", message: expect.stringMatching(/stream stopped.*(deleted|revoked)/i) })
    await expect.poll(sessionsOfGateway, { timeout: 5000 }).toEqual([])
    const end = (await auditRows(cut.requestId)).find((r: { event_type: string }) => r.event_type === "query_stream_end")
    expect(end).toMatchObject({ outcome: "error", rows: cut.rowCount })
  })

  it.skipIf(skip)("charges a session budget the rows it streamed", async () => {
    expect((await request(gateway.url, "/api/budget", { key: admin, body: { session: "export", max_rows: 12_000 } })).status).toBe(201)
    const first = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select id from customers", session: "export", row_limit: 10_000 })
    expect(first.end.budget).toMatchObject({ session: "export", used: { rows: 5000 } })
    const second = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select g from generate_series(1, 8000) g", session: "export", row_limit: 10_000 })
    // Cut at the 7,000 rows the budget has left.
    expect(second.rowCount).toBe(7000)
    expect(second.end).toMatchObject({ completeness: "truncated", truncated_at: 7000 })
    expect(second.end.budget).toMatchObject({ used: { rows: 12_000 }, exhausted: true })
    const refused = await streamQuery(gateway.url, querier, { connection_name: "pg", sql: "select 1", session: "export" })
    expect(refused.status).toBe(429)
    expect(refused.json).toMatchObject({ code: "budget_exhausted" })
  })

  it.skipIf(skip)("MariaDB streams through its own result stream; a client that leaves gets the statement killed on the server", { timeout: 60_000 }, async () => {
    const capped = await streamQuery(gateway.url, querier, { connection_name: "maria", sql: "select seq, concat('row ', seq) as label from seq_1_to_200000", row_limit: 150_000 })
    expect(capped.head.columns.map((c: { name: string }) => c.name)).toEqual(["seq", "label"])
    expect(capped.rowCount).toBe(150_000)
    // seq is a BIGINT UNSIGNED: 64-bit integers stay exact, as strings, as in buffered results.
    expect(capped.lastRow).toEqual(["150000", "row 150000"])
    expect(capped.end).toMatchObject({ row_count: 150_000, completeness: "truncated", truncated_at: 150_000 })

    const gone = await streamQuery(
      gateway.url,
      querier,
      { connection_name: "maria", sql: "select a.seq, b.seq from seq_1_to_100000 a, seq_1_to_100000 b", row_limit: 1_000_000, timeout_seconds: 300 },
      { abortAfterRows: 5_000 }
    )
    expect(gone.rowCount).toBeGreaterThanOrEqual(5_000)
    // Read on the server itself: the gateway refuses processlist, which shows other sessions' SQL.
    const running = async () => {
      const mysql = await import("mysql2/promise")
      const server = await mysql.createConnection({ uri: TEST_MYSQL_URL })
      try {
        const [rows] = await server.query("select id from information_schema.processlist where info like ? and info not like '%processlist%'", [`%request=${gone.requestId}%`])
        return (rows as Array<unknown>).length
      } finally {
        await server.end()
      }
    }
    await expect.poll(running, { timeout: 5000 }).toBe(0)
  })

  it.skipIf(skip)("DuckDB streams chunk by chunk, and its connection serves the next query after a stream cut at the cap", async () => {
    const file = path.join(gateway.dataDir, "stream.duckdb")
    const duck = await DuckDBInstance.create(file)
    const connection = await duck.connect()
    await connection.run("create table events as select range as id, 'event ' || range as label from range(300000)")
    connection.closeSync()
    duck.closeSync()
    expect((await request(gateway.url, "/api/connections", { key: admin, body: { name: "duck", db_type: "duckdb", database: file } })).status).toBe(201)
    const capped = await streamQuery(gateway.url, querier, { connection_name: "duck", sql: "select id, label from events order by id", row_limit: 250_000 })
    expect(capped.head.columns.map((c: { name: string }) => c.name)).toEqual(["id", "label"])
    expect(capped.rowCount).toBe(250_000)
    // BIGINT values stay exact, as strings, as in buffered results.
    expect(capped.lastRow).toEqual(["249999", "event 249999"])
    expect(capped.end).toMatchObject({ row_count: 250_000, completeness: "truncated" })
    for (let i = 0; i < 3; i++) {
      const again = await streamQuery(gateway.url, querier, { connection_name: "duck", sql: "select count(*) as n from events" })
      expect(again.end).toMatchObject({ row_count: 1, completeness: "complete" })
      expect(again.firstRows[0]).toEqual(["300000"])
    }
  })

  it.skipIf(skip)("connections without a cursor of their own stream their capped result as one batch", async () => {
    const lite = new Database(path.join(gateway.dataDir, "stream.db"))
    lite.exec("create table t (x integer); insert into t values (1), (2), (3)")
    lite.close()
    expect((await request(gateway.url, "/api/connections", { key: admin, body: { name: "lite", db_type: "sqlite", database: path.join(gateway.dataDir, "stream.db") } })).status).toBe(201)
    const small = await streamQuery(gateway.url, querier, { connection_name: "lite", sql: "select x from t order by x", row_limit: 2 })
    expect(small.head.columns.map((c: { name: string }) => c.name)).toEqual(["x"])
    expect(small.rowCount).toBe(2)
    expect(small.end).toMatchObject({ row_count: 2, completeness: "truncated", truncated_at: 2 })
  })
})
