/**
 * Effect operations per request (issue 18): the gateway's own app and services in this process on a
 * PostgreSQL store, behind the same server and pipeline, with a Supervisor counting every operation
 * the runtime evaluates while 20 requests of each kind run one at a time (REST and MCP). A count does not depend on
 * the machine's load, so it shows what a change to the request path saves before a timed run does.
 * Not a test: prints, per route, the operations per request and the kinds that make them up.
 *
 *   npm run bench:ops [-- --detail query --lane fast|effect]   (--detail: print the breakdown of the routes whose label contains it;
 *   --lane effect: without the fast lane in front)
 */
import { parseArgs } from "node:util"
import { ConfigProvider, Effect, Layer, RuntimeFlags, Supervisor } from "effect"
import { ServicesLive } from "../app/App"
import { servingApp } from "../app/HttpServer"
import { AppConfig } from "../layers/AppConfig"
import { drainingServer } from "../layers/DrainingServer"
import { shutdownPlan } from "../layers/ShutdownDeadline"
import { makeFastLane } from "../src/gate/FastLane"
import { makeFastQuery } from "../src/gate/FastQuery"
import { ApiKeys } from "../src/services/ApiKeys"
import { freePort, tempDataDir } from "../test/support/Gateway"
import { localOperator } from "../test/support/InProcess"
import { createTestDatabase } from "../test/support/Servers"
import { UNLIMITED } from "./support/Load"
import { createOrders, POINT_QUERY } from "./support/PointQuery"

const { values } = parseArgs({ options: { detail: { type: "string", default: "" }, lane: { type: "string", default: "fast" } } })
if (values.lane !== "fast" && values.lane !== "effect") throw new Error("--lane is fast or effect")
const REQUESTS = 20

/** Counts the operations of every fiber while on, by kind (the instruction, and the function it carries). */
class OperationCounter extends Supervisor.AbstractSupervisor<void> {
  readonly value = Effect.void
  on = false
  total = 0
  readonly byKind = new Map<string, number>()
  override onEffect(_fiber: unknown, effect: unknown) {
    if (!this.on) return
    this.total++
    const op = effect as { readonly _op: string; readonly effect_instruction_i0?: unknown }
    const f = op.effect_instruction_i0
    const kind = `${op._op} ${typeof f === "function" ? f.name || String(f).slice(0, 80).replace(/\s+/g, " ") : ""}`
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1)
  }
  reset() {
    this.total = 0
    this.byKind.clear()
  }
}

const counter = new OperationCounter()
const fixture = await createTestDatabase()
await createOrders(fixture)
const store = await createTestDatabase()
const port = await freePort()
const settings = new Map([...Object.entries(UNLIMITED), ["SP_DATA_DIR", tempDataDir()], ["SP_WEB_PORT", "0"], ["DATABASE_URL", store.url], ["SP_LOCAL_ACCESS", "false"]])
const InProcess = servingApp((app, pipeline) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const query = values.lane === "fast" ? yield* makeFastQuery(pipeline) : undefined
      const front = values.lane === "fast" ? { front: makeFastLane(yield* AppConfig, query === undefined ? [] : [query]) } : {}
      return drainingServer(app, pipeline.wrap, { port, host: "127.0.0.1", shutdown: shutdownPlan(5), ...front })
    })
  )
).pipe(
  Layer.provideMerge(ServicesLive),
  Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(settings))),
  Layer.provide(Supervisor.addSupervisor(counter)),
  Layer.provide(RuntimeFlags.enableOpSupervision)
)

await Effect.gen(function* () {
  const key = (yield* (yield* ApiKeys).create(localOperator, { name: "bench", scopes: ["read", "query", "write"] })).key
  const call = (path: string, body?: unknown) => async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "x-api-key": key, "content-type": "application/json", accept: "application/json, text/event-stream" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    if (response.status >= 300) throw new Error(`${path}: ${response.status} ${text}`)
  }
  yield* Effect.promise(call("/api/connections", { name: "bench", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: fixture.name, username: "root" }))
  const routes: ReadonlyArray<[string, () => Promise<void>]> = [
    ["GET /health", call("/health")],
    ["GET /api/connections (key check, store read, audit row)", call("/api/connections")],
    ["POST /api/query (point lookup)", call("/api/query", { connection_name: "bench", sql: POINT_QUERY })],
    [
      "MCP tools/call query_database (point lookup)",
      call("/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "query_database", arguments: { connection_name: "bench", sql: POINT_QUERY } } })
    ]
  ]
  for (const [label, run] of routes) {
    for (let i = 0; i < 50; i++) yield* Effect.promise(run)
    // The audit writer's commits of the warm-up are not the measured requests'.
    yield* Effect.sleep("200 millis")
    counter.reset()
    counter.on = true
    for (let i = 0; i < REQUESTS; i++) yield* Effect.promise(run)
    yield* Effect.sleep("300 millis")
    counter.on = false
    console.log(`${label}: ${Math.round(counter.total / REQUESTS)} operations per request`)
    if (values.detail !== "" && label.includes(values.detail)) {
      const kinds = [...counter.byKind].sort((a, b) => b[1] - a[1]).slice(0, 40)
      console.log(kinds.map(([kind, n]) => `  ${(n / REQUESTS).toFixed(1).padStart(6)}  ${kind}`).join("\n"))
    }
  }
}).pipe(Effect.provide(InProcess), Effect.scoped, Effect.runPromise)
await fixture.drop()
await store.drop()
process.exit(0)
