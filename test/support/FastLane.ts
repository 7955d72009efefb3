import * as http from "node:http"
import { ConfigProvider, Effect, Layer, ManagedRuntime } from "effect"
import { ServicesLive } from "../../app/App"
import { servingApp } from "../../app/HttpServer"
import { AppConfig } from "../../layers/AppConfig"
import { drainingServer, type FrontLane } from "../../layers/DrainingServer"
import { ResultMemory } from "../../layers/ResultMemory"
import { shutdownPlan } from "../../layers/ShutdownDeadline"
import type { Scope } from "../../src/domain/Scope"
import { makeFastLane } from "../../src/gate/FastLane"
import { makeFastQuery } from "../../src/gate/FastQuery"
import { makeFastMcp } from "../../src/mcp/FastMcp"
import { ApiKeys } from "../../src/services/ApiKeys"
import { freePort, tempDataDir } from "./Gateway"
import { request } from "./Http"
import { localOperator, startInProcess } from "./InProcess"
import { createTestDatabase } from "./Servers"

/** The gateway's app behind the fast lane, in this process, noting which responses the lane wrote itself and which the app wrote after the lane read the body. */
export const startFastLane = async (settings: Record<string, string>) => {
  const port = await freePort()
  // Request ids of the responses each way, recorded as they are written.
  const lanes = { answered: new Set<string>(), handedOff: new Set<string>() }
  // Every request the lane took, in order: whether it handed it off (known even for a response never written).
  const taken: Array<{ handed: boolean }> = []
  const faults = { throwAfterAdmission: false }
  // The result memory in use as each fast-lane response was written, by request id.
  const memoryAtWrite = new Map<string, number>()
  const layer = servingApp((app, pipeline) =>
    Layer.unwrapEffect(
      Effect.gen(function* () {
        const config = yield* AppConfig
        const memory = yield* ResultMemory
        // A fault the lane meets once the gate has admitted a request: what a bug between the gate and the answer would be.
        const query = yield* makeFastQuery({
          ...pipeline,
          changeRecordOf: (line, info, started) => {
            if (faults.throwAfterAdmission) {
              faults.throwAfterAdmission = false
              throw new Error("a fault after admission")
            }
            return pipeline.changeRecordOf(line, info, started)
          }
        })
        const mcp = yield* makeFastMcp(pipeline)
        const lane = makeFastLane(config, [query, mcp].filter((route) => route !== undefined))
        const front: FrontLane = (request, response, handOff) => {
          let handed = false
          const took = lane(request, response, (again, body) => {
            handed = true
            handOff(again, body)
          })
          if (!took) return false
          const entry = { handed }
          taken.push(entry)
          request.once("end", () => setImmediate(() => (entry.handed = handed)))
          const writeHead = response.writeHead.bind(response)
          response.writeHead = ((status: number, headers?: Record<string, unknown>) => {
            const id = String(headers?.["x-request-id"] ?? response.getHeader("x-request-id"))
            ;(handed ? lanes.handedOff : lanes.answered).add(id)
            memoryAtWrite.set(id, memory.inUse())
            return writeHead(status, headers as never)
          }) as typeof response.writeHead
          return true
        }
        return drainingServer(app, pipeline.wrap, { port, host: "127.0.0.1", shutdown: shutdownPlan(5), front })
      })
    )
  ).pipe(
    // The same ResultMemory layer as the services' (layers are shared by reference within one build): the memory the executor holds.
    Layer.provideMerge(Layer.merge(ServicesLive, ResultMemory.Default.pipe(Layer.provide(ServicesLive)))),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["SP_DATA_DIR", tempDataDir()], ["SP_LOCAL_ACCESS", "false"], ["SP_WEB_PORT", "0"], ...Object.entries(settings)]))))
  )
  const runtime = ManagedRuntime.make(layer)
  await runtime.runPromise(Effect.void)
  const keyWith = (scopes: ReadonlyArray<Scope>) =>
    runtime.runPromise(Effect.flatMap(ApiKeys, (keys) => keys.create(localOperator, { name: `k-${Math.random()}`, scopes: [...scopes] })).pipe(Effect.map((k) => k.key)))
  return { url: `http://127.0.0.1:${port}`, port, runtime, lanes, taken, faults, memoryAtWrite, keyWith, stop: () => runtime.dispose() }
}

/**
 * `attempt` after `warm` (a call that verifies its key on the fast lane's replica), made again until
 * the fast lane took a request, at most four times: a key is kept 500 ms from its verification,
 * which a busy machine can outlast between the two. How many requests it took, the last time.
 */
export const untilTaken = async (taken: ReadonlyArray<unknown>, warm: () => Promise<unknown>, attempt: () => Promise<unknown>) => {
  for (let tries = 1; ; tries++) {
    await warm()
    const before = taken.length
    await attempt()
    if (taken.length > before || tries === 4) return taken.length - before
  }
}

/** A gateway that can be called, and keys made on it. */
export type Lane = { readonly url: string; readonly keyWith: (scopes: ReadonlyArray<Scope>) => Promise<string> }

/**
 * The fast lane and the Effect app alone, side by side, each with the same connection `pg` to a
 * fresh database holding `people` (30 rows, email masked), and keys on each: admin, one with the
 * query scope, one with read only.
 */
export const startLanesSideBySide = async (settings: Record<string, string>) => {
  const database = await createTestDatabase()
  await database.query("create table people as select g as id, 'person ' || g as name, 'p' || g || '@example.com' as email from generate_series(1, 30) g")
  const [fast, effectOnly] = await Promise.all([startFastLane(settings), startInProcess(settings)])
  const keys = new Map<Lane, { admin: string; querier: string; reader: string }>()
  for (const lane of [fast, effectOnly] as Array<Lane>) {
    const admin = await lane.keyWith(["admin", "read", "write", "query"])
    keys.set(lane, { admin, querier: await lane.keyWith(["query"]), reader: await lane.keyWith(["read"]) })
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    if ((await request(lane.url, "/api/connections", { key: admin, body: connection })).status !== 201) throw new Error("the connection was not made")
    const rules = { rules: [{ table: "people", column: "email", action: "mask" }] }
    if ((await request(lane.url, "/api/connections/pg/pii", { key: admin, method: "PUT", body: rules })).status !== 200) throw new Error("the PII rules were not set")
  }
  const stop = async () => {
    await Promise.all([fast.stop(), effectOnly.stop()])
    await database.drop()
  }
  return { fast, effectOnly, keys, database, stop }
}

/** Sends the head of a POST with `body`'s length but only its first `partial` bytes, then hangs up after `hangUpMs`. */
export const leaveMidBody = (url: string, path: string, headers: Record<string, string>, body: string, partial: number, hangUpMs: number) =>
  new Promise<void>((resolve) => {
    const req = http.request(new URL(path, url), { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } })
    req.on("error", () => resolve())
    req.on("response", (res) => res.resume())
    req.write(body.slice(0, partial))
    setTimeout(() => {
      req.destroy()
      resolve()
    }, hangUpMs)
  })

/** The newest `count` audit rows of a gateway, as what a client that left mid-body leaves of itself: event, status, outcome, route. */
export const newestRows = async (lane: Lane, admin: string, count: number) =>
  ((await request(lane.url, `/api/audit?limit=${count}`, { key: admin })).json.items as Array<Record<string, unknown>>).map((row) => ({
    event: row["event_type"],
    status: row["status"],
    outcome: row["outcome"],
    route: row["route"]
  }))
