import * as http from "node:http"
import type { Gateway } from "../../test/support/Gateway"
import type { TestDatabase } from "../../test/support/Servers"

/** The small query the query and MCP benchmarks time: one row by primary key. */
export const POINT_QUERY = "select id, total, note from orders where id = 42"

/** The table it reads: 1,000 rows. */
export const createOrders = async (database: TestDatabase) => {
  await database.query("create table orders (id int primary key, total numeric, note text)")
  await database.query("insert into orders select g, g * 1.5, 'order ' || g from generate_series(1, 1000) g")
}

/** A gateway connection named `bench` to `database`. */
export const addBenchConnection = async (gateway: Gateway, key: string, database: TestDatabase) => {
  const created = await fetch(`${gateway.url}/api/connections`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ name: "bench", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" })
  })
  if (created.status !== 201) throw new Error(`creating the connection: ${created.status} ${await created.text()}`)
}

/** `POST /api/query` with the point query over keep-alive sockets; `close` ends them. */
export const restPointQuery = (gateway: Gateway, key: string) =>
  pointQueryAt(gateway, key, "/api/query", { connection_name: "bench", sql: POINT_QUERY })

/** The same as an MCP `query_database` tool call, one stateless JSON-RPC message per POST. */
export const mcpPointQuery = (gateway: Gateway, key: string) =>
  pointQueryAt(gateway, key, "/mcp", {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "query_database", arguments: { connection_name: "bench", sql: POINT_QUERY } }
  })

const pointQueryAt = (gateway: Gateway, key: string, path: string, message: unknown) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
  const url = new URL(`${gateway.url}${path}`)
  const body = JSON.stringify(message)
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": key }
  const call = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        { agent, host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers },
        (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c: Buffer) => chunks.push(c))
          res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`gateway: ${res.statusCode} ${Buffer.concat(chunks).toString()}`))))
        }
      )
      req.on("error", reject)
      req.end(body)
    })
  return { call, close: () => agent.destroy() }
}
