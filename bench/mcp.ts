/**
 * The MCP overhead: the same point query as `query_database` tool calls over /mcp (one SDK client
 * per session) and as `POST /api/query`, at 1 and 16 concurrent sessions, on one gateway (embedded
 * store) against the real PostgreSQL. Not a test: prints Markdown for bench/README.md.
 *
 *   npm run bench:mcp [-- --seconds 8]
 */
import * as os from "node:os"
import { parseArgs } from "node:util"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { localKey, startGateway } from "../test/support/Gateway"
import { createTestDatabase } from "../test/support/Servers"
import { comparisonCells, type Figures, measure, UNLIMITED } from "./support/Load"
import { addBenchConnection, createOrders, POINT_QUERY, restPointQuery } from "./support/PointQuery"

const { values } = parseArgs({ options: { seconds: { type: "string", default: "8" } } })
const seconds = Number(values.seconds)
const SESSIONS = [1, 16]

const database = await createTestDatabase()
const gateway = await startGateway({ env: UNLIMITED })
const rows: Array<string> = []
try {
  await createOrders(database)
  const key = await localKey(gateway)
  await addBenchConnection(gateway, key, database)
  const rest = restPointQuery(gateway, key)

  const clients: Array<Client> = []
  for (let i = 0; i < Math.max(...SESSIONS); i++) {
    const client = new Client({ name: `bench-${i}`, version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gateway.url), { requestInit: { headers: { "x-api-key": key } } }))
    clients.push(client)
  }
  const mcp = async (session: number) => {
    const result = await clients[session]!.callTool({ name: "query_database", arguments: { connection_name: "bench", sql: POINT_QUERY } })
    if (result.isError) throw new Error(`MCP: ${JSON.stringify(result.content)}`)
  }

  for (const sessions of SESSIONS) {
    const a: Figures = await measure(sessions, seconds, rest.call)
    const b: Figures = await measure(sessions, seconds, mcp)
    rows.push(
      `| ${sessions} | ${comparisonCells(a, b)}`
    )
    console.error(`${sessions} sessions: REST ${Math.round(a.perSecond)}/s, MCP ${Math.round(b.perSecond)}/s`)
  }
  for (const client of clients) await client.close()
  rest.close()
} finally {
  await gateway.stop()
  await database.drop()
}

const cpus = os.cpus()
console.log(`Machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
console.log(`\`${POINT_QUERY}\` on PostgreSQL (loopback), gateway on its embedded store, ${seconds} s per cell after a 1.5 s warm-up; clients in this process on the same cores.\n`)
console.log("| sessions | REST q/s | MCP calls/s | ratio | p50 ms REST / MCP | added p50 ms | p99 ms REST / MCP | added p99 ms |")
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|")
for (const row of rows) console.log(row)
