import * as http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Eventually"
import { request } from "../support/Http"
import { startInProcess } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

/** One MCP tools/call; the client hangs up after `hangUpMs` (resolves null), else resolves with the reply. */
const mcpCall = (url: string, key: string, name: string, args: Record<string, unknown>, hangUpMs: number | null) =>
  new Promise<Record<string, any> | null>((resolve) => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })
    const req = http.request(new URL("/mcp", url), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": key, "content-length": String(Buffer.byteLength(body)) }
    })
    req.on("error", () => resolve(null))
    req.on("response", (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))))
    })
    req.end(body)
    if (hangUpMs !== null)
      setTimeout(() => {
        req.destroy()
        resolve(null)
      }, hangUpMs)
  })

describe.skipIf(skip)("MCP: a client that hangs up mid-call, and calls of tools that are not there", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let database: TestDatabase
  let admin: string
  let querier: string

  beforeAll(async () => {
    database = await createTestDatabase()
    gateway = await startInProcess({ SP_RESULT_MEMORY_MB: "16", SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" })
    admin = await gateway.keyWith(["read", "query", "write", "admin"])
    querier = await gateway.keyWith(["read", "query"])
    const pg = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: pg })).status).toBe(201)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const running = async (marker: string) =>
    (await database.query("select count(*)::int as n from pg_stat_activity where datname = $1 and state = 'active' and query like $2 and pid <> pg_backend_pid()", [database.name, `%${marker}%`]))[0]!.n as number
  const mcpRows = async () => (await request(gateway.url, "/api/audit?event_type=mcp_tool_call&limit=50", { key: admin })).json.items as Array<Record<string, any>>

  it("its query is stopped on the database, and the result memory it held is all given back", async () => {
    // Minutes of work left running (its inner side is 1,000 rows, so nothing spills): stopped, it is gone within seconds.
    const slow = "select count(*) as hang_up_marker from generate_series(1, 2000000) a, generate_series(1, 1000) b"
    await mcpCall(gateway.url, querier, "query_database", { connection_name: "pg", sql: slow }, 400)
    await eventually(() => running("hang_up_marker"), (n) => n === 0, "the abandoned statement stopped", 8_000, 50)
    // Results of about 3 MB each, read for a while: the client is gone before they are whole.
    for (let i = 0; i < 6; i++) {
      const big = `select g, repeat('x', 3000) as pad, ${i} as big_marker from generate_series(1, 1000) g where (select count(*) from generate_series(1, 2000000)) > 0`
      await mcpCall(gateway.url, querier, "query_database", { connection_name: "pg", sql: big }, 150)
      await eventually(() => running("big_marker"), (n) => n === 0, "the abandoned statement stopped", 5_000, 50)
    }
    // 18 MB of results abandoned in 16 MB of result memory: a 2 MB one fits only if all of it was given back.
    const answer = await mcpCall(gateway.url, querier, "query_database", { connection_name: "pg", sql: "select g, repeat('y', 2000) as pad from generate_series(1, 1000) g" }, null)
    expect(answer?.["result"]?.isError, JSON.stringify(answer).slice(0, 300)).toBeFalsy()
    const abandoned = (await mcpRows()).find((row) => (row.sql ?? "").includes("hang_up_marker"))
    expect(abandoned).toMatchObject({ outcome: "error", status: 499 })
  }, 90_000)

  it("a tool that does not exist, or that the message's tool set does not offer, is a refused tool call in the audit log", async () => {
    const missing = await mcpCall(gateway.url, querier, "drop_everything", {}, null)
    expect(missing?.["result"]).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/^unknown_tool:/) }] })
    const rows = await mcpRows()
    expect(rows[0]).toMatchObject({ outcome: "refused", block_reason: "unknown_tool", details: { tool: "drop_everything", error_code: "unknown_tool" } })
    await mcpCall(gateway.url, querier, "x".repeat(200), {}, null)
    expect((await mcpRows())[0]).toMatchObject({ block_reason: "unknown_tool", details: { tool: "[200 characters not kept]" } })
  })
})
