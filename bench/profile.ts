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
import { UNLIMITED } from "./support/Load"
import { addBenchConnection, createOrders, mcpPointQuery, restPointQuery } from "./support/PointQuery"

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "10" }, clients: { type: "string", default: "8" }, surface: { type: "string", default: "rest" } }
})
if (values.surface !== "rest" && values.surface !== "mcp") throw new Error("--surface is rest or mcp")
const seconds = Number(values.seconds)
const clients = Number(values.clients)

interface Profile {
  readonly nodes: ReadonlyArray<{ readonly id: number; readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number } }>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** The package a frame's file belongs to: a node_modules package, the gateway's bundle, a Node internal, or the VM's own. */
const packageOf = (url: string, functionName: string) => {
  if (url.includes("node_modules/")) {
    const parts = url.split("node_modules/").at(-1)!.split("/")
    return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!
  }
  if (url.includes("/dist/")) return "sluice (dist)"
  if (url.startsWith("node:")) return "node internals"
  if (url !== "") return url
  return functionName.startsWith("(") ? functionName : `(${functionName || "native"})`
}

const summarize = (profile: Profile, requests: number) => {
  const selfTime = new Map<number, number>()
  profile.samples.forEach((id, i) => selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const byPackage = new Map<string, number>()
  const byFunction = new Map<string, number>()
  let total = 0
  for (const node of profile.nodes) {
    const time = selfTime.get(node.id) ?? 0
    total += time
    const { functionName, url, lineNumber } = node.callFrame
    const pkg = packageOf(url, functionName)
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + time)
    const fn = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + time)
  }
  const top = (times: Map<string, number>, n: number) =>
    [...times]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, time]) => `| ${((time / total) * 100).toFixed(1)} % | ${(time / 1000 / requests).toFixed(3)} | \`${name}\` |`)
      .join("\n")
  const header = "| share | ms per request | |\n|---:|---:|---|"
  return `By package (self time; the whole process lifetime, start-up included):\n\n${header}\n${top(byPackage, 15)}\n\nBy function:\n\n${header}\n${top(byFunction, 30)}`
}

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
console.log(summarize(JSON.parse(fs.readFileSync(path.join(profileDir, file), "utf8")) as Profile, requests))
