import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { type HttpResult, request } from "../support/Http"
import { createTestDatabase, mysqlAvailable, mysqlConnection, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const noMysql = skip || !(await mysqlAvailable())
const LOAD_ENV = { SP_RATE_LIMIT_GENERAL_RPM: "1000000", SP_RATE_LIMIT_EXPENSIVE_RPM: "1000000", SP_PER_KEY_RPM: "1000000" }
const BIG = "x".repeat(100_000)

const mcpCall = (name: string, args: Record<string, unknown>) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })
const MCP_HEADERS = { accept: "application/json, text/event-stream" }
const toolText = (res: HttpResult): string => (res.json?.result?.content ?? []).map((c: { text: string }) => c.text).join("\n")

describe("audit poisoning: attacker input never decides whether another caller's audit row is written", () => {
  let gateway: Gateway
  let database: TestDatabase
  let admin: string
  let querier: string

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table items (id int primary key, label text); insert into items select g, 'item ' || g from generate_series(1, 50) g")
    gateway = await startApp({ env: LOAD_ENV })
    admin = await localKey(gateway)
    querier = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "querier", scopes: ["read", "query"] } })).json.key
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    if (!noMysql) expect((await request(gateway.url, "/api/connections", { key: admin, body: mysqlConnection("maria") })).status).toBe(201)
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const rest = (body: unknown) => request(gateway.url, "/api/query", { key: querier, body })
  const mcp = (name: string, args: Record<string, unknown>) => request(gateway.url, "/mcp", { key: querier, headers: MCP_HEADERS, body: mcpCall(name, args) })

  const rowsOf = async (requestId: string) =>
    ((await request(gateway.url, "/api/audit?limit=500", { key: admin })).json.items as Array<Record<string, any>>).filter((r) => r.request_id === requestId)

  /** Every audit row of the org, walking all pages. */
  const auditRequestIds = async () => {
    const ids = new Set<string>()
    let cursor: string | null = null
    do {
      const page: HttpResult = await request(gateway.url, `/api/audit?limit=500${cursor === null ? "" : `&cursor=${cursor}`}`, { key: admin })
      expect(page.status, page.text).toBe(200)
      for (const row of page.json.items as Array<{ request_id: string }>) ids.add(row.request_id)
      cursor = page.json.next_cursor
    } while (cursor !== null)
    return ids
  }

  it.skipIf(skip)("40 concurrent REST and MCP queries with NUL, lone-surrogate and 100 KB inputs mixed in: no 503, every acknowledged request has its row", async () => {
    const good = Array.from({ length: 34 }, (_, i) =>
      i % 2 === 0
        ? () => rest({ connection_name: "pg", sql: `select id, label from items where id = ${i + 1}` })
        : () => mcp("query_database", { connection_name: "pg", sql: `select id, label from items where id = ${i + 1}` })
    )
    const poison = [
      () => mcp("query_database", { connection_name: "pg\u0000evil", sql: "select 1" }),
      () => mcp("query_database", { connection_name: "pg", sql: "select 1 -- \u0000" }),
      () => mcp("query_database", { connection_name: "pg", sql: `select '\ud800' as lone, "\udfff" from items` }),
      () => rest({ connection_name: "pg", sql: 'select * from "\ud800x"' }),
      () => mcp("query_database", { connection_name: "pg", sql: `select 1 /* ${BIG.slice(0, 99_000)} */` }),
      () => mcp("sample_table", { connection_name: "pg", table_name: `items\u0000${BIG.slice(0, 200)}` })
    ]
    const calls = [...good.map((run) => ({ good: true, run })), ...poison.map((run) => ({ good: false, run }))]
    // Interleaved so the poison lands in the same group commits as the good requests.
    calls.sort((a, b) => calls.indexOf(a) % 7 - calls.indexOf(b) % 7)
    const results = await Promise.all(calls.map(async (call) => ({ good: call.good, res: await call.run() })))

    for (const { good: isGood, res } of results) {
      expect(res.status, res.text.slice(0, 300)).not.toBe(503)
      if (isGood) {
        expect(res.status, res.text.slice(0, 300)).toBe(200)
        if (res.json?.result !== undefined) expect(res.json.result.isError ?? false, toolText(res)).toBe(false)
      }
    }
    const acknowledged = results.filter(({ res }) => res.status >= 200 && res.status < 300).map(({ res }) => String(res.headers["x-request-id"]))
    expect(acknowledged.length).toBeGreaterThanOrEqual(good.length)
    const stored = await auditRequestIds()
    const missing = acknowledged.filter((id) => !stored.has(id))
    expect(missing).toEqual([])
  })

  it.skipIf(skip)("MCP arguments are decoded with the REST schemas before anything runs: a clear error naming the field, nothing run or taken from them", async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ["query_database", { connection_name: "pg\u0000evil", sql: "select 1" }, /^invalid_arguments: connection_name: must be 1 to 64 letters, digits, '_' or '-'$/],
      ["query_database", { connection_name: "pg", sql: "select 1 -- \u0000" }, /^invalid_arguments: sql: sql must not contain NUL bytes$/],
      ["sample_table", { connection_name: "../pg", table_name: "items" }, /^invalid_arguments: connection_name: must be 1 to 64 letters/]
    ]
    for (const [tool, args, message] of cases) {
      const res = await mcp(tool, args)
      expect(res.status).toBe(200)
      expect(res.json.result.isError).toBe(true)
      expect(toolText(res)).toMatch(message)
      const rows = await rowsOf(String(res.headers["x-request-id"]))
      // One row for the call, none for a query: nothing ran.
      expect(rows.map((r) => r.event_type)).toEqual(["mcp_tool_call"])
      expect(rows[0]).toMatchObject({ connection: null, sql: null, outcome: "error", details: { tool, error_code: "invalid_arguments" } })
      // Arguments that did not decode are not trusted as names either.
      expect(JSON.parse(rows[0]!.details.arguments).connection_name).toMatch(/^\[\d+ characters not kept\]$/)
    }
  })

  it.skipIf(skip)("tool-call rows keep arguments redacted: SQL literals as for query rows, free text reduced to its length", async () => {
    const query = await mcp("query_database", { connection_name: "pg", sql: "select id from items where label = 'alice@example.com'" })
    expect(query.json.result.isError ?? false).toBe(false)
    const [call] = (await rowsOf(String(query.headers["x-request-id"]))).filter((r) => r.event_type === "mcp_tool_call")
    expect(JSON.parse(call!.details.arguments)).toEqual({ connection_name: "pg", sql: "select id from items where label = '?'" })
    expect(call!.sql).toBe("select id from items where label = '?'")

    const explored = await mcp("explore_column", { connection_name: "pg", table_name: "items", column: "label", filter_pattern: "alice%" })
    expect(explored.json.result.isError ?? false, toolText(explored)).toBe(false)
    const rows = await rowsOf(String(explored.headers["x-request-id"]))
    const tool = rows.find((r) => r.event_type === "mcp_tool_call")!
    expect(JSON.parse(tool.details.arguments)).toEqual({ connection_name: "pg", table_name: "items", column: "label", filter_pattern: "[6 characters not kept]" })
    expect(JSON.stringify(rows)).not.toContain("alice")
  })

  it.skipIf(noMysql)("MariaDB: double-quoted strings and backslash-escaped quotes are redacted in the query row and the tool-call row", async () => {
    const sql = `select "alice@example.com" as a, 'O\\'Brien 555-12-3456' as b`
    const res = await mcp("query_database", { connection_name: "maria", sql })
    expect(res.json.result.isError ?? false, toolText(res)).toBe(false)
    const rows = await rowsOf(String(res.headers["x-request-id"]))
    expect(rows.length).toBeGreaterThan(0)
    for (const row of rows) {
      // The literals' own pieces, not a bare digit run: a random id may hold "555".
      expect(JSON.stringify(row)).not.toMatch(/alice|Brien|555-12|12-3456/)
    }
    expect(rows.find((r) => r.event_type === "mcp_tool_call")!.sql).toBe("select '?' as a, '?' as b")
  })
})
