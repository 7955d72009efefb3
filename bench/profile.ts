/**
 * Where the gateway's CPU goes under load (issue 18): the built gateway as a real process under
 * `node --cpu-prof`, on a PostgreSQL store, with 8 closed-loop clients sending point lookups
 * (`POST /api/query`, or MCP `query_database` calls with `--surface mcp`) for `--seconds`; when it
 * has stopped, its profile summarized by package and by function (self time). Not a test: prints
 * for bench/README.md and keeps the .cpuprofile (open it in Chrome DevTools) in a temporary
 * directory it names.
 *
 *   npm run bench:profile [-- --seconds 10 --clients 8 --surface rest|mcp]
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { localKey, startGateway } from "../test/support/Gateway"
import { createTestDatabase } from "../test/support/Servers"
import { type CpuProfile, summarizeProfile } from "./support/CpuProfile"
import { UNLIMITED } from "./support/Load"
import { addBenchConnection, createOrders, mcpPointQuery, restPointQuery } from "./support/PointQuery"

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "10" }, clients: { type: "string", default: "8" }, surface: { type: "string", default: "rest" } }
})
if (values.surface !== "rest" && values.surface !== "mcp") throw new Error("--surface is rest or mcp")
const seconds = Number(values.seconds)
const clients = Number(values.clients)

const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-profile-"))
const fixture = await createTestDatabase()
const storeDatabase = await createTestDatabase()
await createOrders(fixture)
const gateway = await startGateway({ env: UNLIMITED, databaseUrl: storeDatabase.url, nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] })
let requests = 0
try {
  const key = await localKey(gateway)
  await addBenchConnection(gateway, key, fixture)
  const { call, close } = (values.surface === "mcp" ? mcpPointQuery : restPointQuery)(gateway, key)
  const loop = async (until: number, counted: boolean) => {
    while (Date.now() < until) {
      await call()
      if (counted) requests++
    }
  }
  await Promise.all(Array.from({ length: clients }, () => loop(Date.now() + 2_000, false)))
  const until = Date.now() + seconds * 1_000
  await Promise.all(Array.from({ length: clients }, () => loop(until, true)))
  close()
} finally {
  await gateway.stop()
  await fixture.drop()
  await storeDatabase.drop()
}
const file = fs.readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"))
if (file === undefined) throw new Error(`the gateway wrote no profile to ${profileDir}`)
console.log(`${values.surface}, ${clients} clients, ${seconds} s: ${Math.round(requests / seconds)} point lookups/s; profile in ${path.join(profileDir, file)}\n`)
console.log(summarizeProfile(JSON.parse(fs.readFileSync(path.join(profileDir, file), "utf8")) as CpuProfile, requests, "request"))
