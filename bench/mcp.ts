/**
 * The MCP overhead: the same point query as `query_database` tool calls over /mcp (one SDK client
 * per session) and as `POST /api/query`, at 1 and 16 concurrent sessions, on one gateway (embedded
 * store) against the real PostgreSQL. Not a test: prints Markdown for bench/README.md.
 *
 *   npm run bench:mcp [-- --seconds 8]
 */
import * as http from "node:http"
import * as os from "node:os"
import { parseArgs } from "node:util"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { localKey, startGateway } from "../test/support/Gateway"
import { createTestDatabase } from "../test/support/Servers"
import { type Figures, measure, UNLIMITED } from "./support/Load"

const { values } = parseArgs({ options: { seconds: { type: "string", default: "8" } } })
const seconds = Number(values.seconds)
const SQL = "select id, total, note from orders where id = 42"
const SESSIONS = [1, 16]

const database = await createTestDatabase()
const gateway = await startGateway({ env: UNLIMITED })
const rows: Array<string> = []
try {
  await database.query("create table orders (id int primary key, total numeric, note text)")
  await database.query("insert into orders select g, g * 1.5, 'order ' || g from generate_series(1, 1000) g")
  const key = await localKey(gateway)
  const created = await fetch(`${gateway.url}/api/connections`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ name: "bench", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" })
  })
  if (created.status !== 201) throw new Error(`creating the connection: ${created.status} ${await created.text()}`)

  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
  const url = new URL(`${gateway.url}/api/query`)
  const body = JSON.stringify({ connection_name: "bench", sql: SQL })
  const rest = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        { agent, host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { "content-type": "application/json", "x-api-key": key } },
        (res) => {
          res.resume()
          res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`REST: ${res.statusCode}`))))
        }
      )
      req.on("error", reject)
      req.end(body)
    })

  const clients: Array<Client> = []
  for (let i = 0; i < Math.max(...SESSIONS); i++) {
    const client = new Client({ name: `bench-${i}`, version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gateway.url), { requestInit: { headers: { "x-api-key": key } } }))
    clients.push(client)
  }
  const mcp = async (session: number) => {
    const result = await clients[session]!.callTool({ name: "query_database", arguments: { connection_name: "bench", sql: SQL } })
    if (result.isError) throw new Error(`MCP: ${JSON.stringify(result.content)}`)
  }

  for (const sessions of SESSIONS) {
    const a: Figures = await measure(sessions, seconds, rest)
    const b: Figures = await measure(sessions, seconds, mcp)
    rows.push(
      `| ${sessions} | ${Math.round(a.perSecond)} | ${Math.round(b.perSecond)} | ${(b.perSecond / a.perSecond).toFixed(2)} | ` +
        `${a.p50.toFixed(2)} / ${b.p50.toFixed(2)} | ${(b.p50 - a.p50).toFixed(2)} | ${a.p99.toFixed(2)} / ${b.p99.toFixed(2)} | ${(b.p99 - a.p99).toFixed(2)} |`
    )
    console.error(`${sessions} sessions: REST ${Math.round(a.perSecond)}/s, MCP ${Math.round(b.perSecond)}/s`)
  }
  for (const client of clients) await client.close()
  agent.destroy()
} finally {
  await gateway.stop()
  await database.drop()
}

const cpus = os.cpus()
console.log(`Machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
console.log(`\`${SQL}\` on PostgreSQL (loopback), gateway on its embedded store, ${seconds} s per cell after a 1.5 s warm-up; clients in this process on the same cores.\n`)
console.log("| sessions | REST q/s | MCP calls/s | ratio | p50 ms REST / MCP | added p50 ms | p99 ms REST / MCP | added p99 ms |")
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|")
for (const row of rows) console.log(row)
