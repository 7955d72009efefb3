import { ConfigProvider, Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ServicesLive } from "../../app/App"
import { servingApp } from "../../app/HttpServer"
import { AppConfig } from "../../layers/AppConfig"
import { drainingServer, type FrontLane } from "../../layers/DrainingServer"
import { shutdownPlan } from "../../layers/ShutdownDeadline"
import type { Scope } from "../../src/domain/Scope"
import { makeFastLane } from "../../src/gate/FastLane"
import { makeFastQuery } from "../../src/gate/FastQuery"
import { ApiKeys } from "../../src/services/ApiKeys"
import { freePort, tempDataDir } from "../support/Gateway"
import { request, type RequestOptions } from "../support/Http"
import { localOperator, startInProcess } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

const SETTINGS = { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" }

/** The gateway's app behind the fast lane, in this process, noting which responses the lane wrote itself and which the app wrote after the lane read the body. */
const startFastLane = async () => {
  const port = await freePort()
  // Request ids of the responses each way, recorded as they are written.
  const lanes = { answered: new Set<string>(), handedOff: new Set<string>() }
  const layer = servingApp((app, pipeline) =>
    Layer.unwrapEffect(
      Effect.gen(function* () {
        const config = yield* AppConfig
        const query = yield* makeFastQuery(pipeline)
        const lane = makeFastLane(config, query === undefined ? [] : [query])
        const front: FrontLane = (request, response, handOff) => {
          let handed = false
          const taken = lane(request, response, (again, body) => {
            handed = true
            handOff(again, body)
          })
          if (!taken) return false
          const writeHead = response.writeHead.bind(response)
          response.writeHead = ((status: number, headers?: Record<string, unknown>) => {
            ;(handed ? lanes.handedOff : lanes.answered).add(String(headers?.["x-request-id"] ?? response.getHeader("x-request-id")))
            return writeHead(status, headers as never)
          }) as typeof response.writeHead
          return true
        }
        return drainingServer(app, pipeline.wrap, { port, host: "127.0.0.1", shutdown: shutdownPlan(5), front })
      })
    )
  ).pipe(
    Layer.provideMerge(ServicesLive),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["SP_DATA_DIR", tempDataDir()], ["SP_LOCAL_ACCESS", "false"], ["SP_WEB_PORT", "0"], ...Object.entries(SETTINGS)]))))
  )
  const runtime = ManagedRuntime.make(layer)
  await runtime.runPromise(Effect.void)
  const keyWith = (scopes: ReadonlyArray<Scope>) =>
    runtime.runPromise(Effect.flatMap(ApiKeys, (keys) => keys.create(localOperator, { name: `k-${Math.random()}`, scopes: [...scopes] })).pipe(Effect.map((k) => k.key)))
  return { url: `http://127.0.0.1:${port}`, lanes, keyWith, stop: () => runtime.dispose() }
}

type Lane = { readonly url: string; readonly keyWith: (scopes: ReadonlyArray<Scope>) => Promise<string> }

/** A response and its audit row, less what differs by the instant or the gateway (ids, dates, durations, keys). */
const seen = async (lane: Lane, admin: string, result: Awaited<ReturnType<typeof request>>) => {
  // The length moves with execution_ms's digits; its presence is what both lanes must agree on.
  const { date: _date, "x-request-id": requestId, "content-length": length, ...others } = result.headers
  const headers = { ...others, "content-length": length === undefined ? "none" : "some" }
  const { query_id: _q, execution_ms: _e, ...body } = (result.json ?? {}) as Record<string, unknown>
  const rows = (await request(lane.url, "/api/audit?limit=20", { key: admin })).json.items as Array<Record<string, unknown>>
  const row = rows.find((r) => r["request_id"] === requestId)
  const { id: _id, timestamp: _t, duration_ms: _d, request_id: _r, key_id: _k, key_name: _n, principal: _p, user_id: _u, details, ...rest } = row ?? {}
  const { query_id: _dq, execution_ms: _de, ...facts } = (details ?? {}) as Record<string, unknown>
  const text = result.text.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<id>").replace(/"execution_ms":[\d.]+/g, '"execution_ms":0')
  return { status: result.status, headers, body: result.json === undefined ? text : body, audit: row === undefined ? null : { ...rest, details: facts } }
}

describe("POST /api/query on the fast lane answers as the Effect app does (issue 28)", () => {
  let fast: Awaited<ReturnType<typeof startFastLane>>
  let effectOnly: Awaited<ReturnType<typeof startInProcess>>
  let database: TestDatabase
  const keys = new Map<Lane, { admin: string; querier: string; reader: string }>()

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table people as select g as id, 'person ' || g as name, 'p' || g || '@example.com' as email from generate_series(1, 30) g")
    ;[fast, effectOnly] = await Promise.all([startFastLane(), startInProcess(SETTINGS)])
    for (const lane of [fast, effectOnly] as Array<Lane>) {
      const admin = await lane.keyWith(["admin", "read", "write", "query"])
      keys.set(lane, { admin, querier: await lane.keyWith(["query"]), reader: await lane.keyWith(["read"]) })
      const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
      expect((await request(lane.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
      const rules = { rules: [{ table: "people", column: "email", action: "mask" }] }
      expect((await request(lane.url, "/api/connections/pg/pii", { key: admin, method: "PUT", body: rules })).status).toBe(200)
    }
  }, 60_000)
  afterAll(async () => {
    await Promise.all([fast?.stop(), effectOnly?.stop()])
    await database?.drop()
  })

  /** Each call as a client sends it, with the key it uses, and which lane answers it once this replica's caches hold the key: the fast lane, the app after the fast lane read the body, or the app alone. */
  const CALLS: ReadonlyArray<readonly [string, "querier" | "reader" | "none" | "bad", RequestOptions, "fast" | "handed off" | "app"]> = [
    ["a point lookup", "querier", { body: { connection_name: "pg", sql: "select id, name from people where id = 7" } }, "fast"],
    ["a masked column", "querier", { body: { connection_name: "pg", sql: "select id, email from people order by id limit 3" } }, "fast"],
    ["a truncated result", "querier", { body: { connection_name: "pg", sql: "select id from people order by id", row_limit: 5 } }, "fast"],
    ["a write, refused", "querier", { body: { connection_name: "pg", sql: "delete from people" } }, "fast"],
    ["a failing statement", "querier", { body: { connection_name: "pg", sql: "select nope from people" } }, "fast"],
    ["a statement past its timeout", "querier", { body: { connection_name: "pg", sql: "select pg_sleep(3)", timeout_seconds: 1 } }, "fast"],
    ["an unknown connection", "querier", { body: { connection_name: "nope", sql: "select 1" } }, "fast"],
    ["a row limit over the buffered answer's", "querier", { body: { connection_name: "pg", sql: "select 1", row_limit: 200_000 } }, "fast"],
    ["a row limit over any answer's", "querier", { body: { connection_name: "pg", sql: "select 1", row_limit: 10_000_000 } }, "handed off"],
    ["a body that does not decode", "querier", { body: { connection_name: "pg", sql: "select 1", extra: true } }, "handed off"],
    ["a body that is not JSON", "querier", { rawBody: "{nope", headers: { "content-type": "application/json" } }, "handed off"],
    ["a JSON body nested too deep", "querier", { rawBody: `${"[".repeat(200)}${"]".repeat(200)}`, headers: { "content-type": "application/json" } }, "handed off"],
    ["a key without the query scope", "reader", { body: { connection_name: "pg", sql: "select 1" } }, "handed off"],
    ["no key", "none", { body: { connection_name: "pg", sql: "select 1" } }, "app"],
    ["an unknown key", "bad", { body: { connection_name: "pg", sql: "select 1" } }, "handed off"],
    ["a form body", "querier", { rawBody: "connection_name=pg", headers: { "content-type": "application/x-www-form-urlencoded" } }, "app"],
    ["a streamed answer", "querier", { body: { connection_name: "pg", sql: "select id from people order by id limit 2" }, headers: { accept: "application/x-ndjson" } }, "app"]
  ]

  it.skipIf(skip)("every call gets the same status, headers, body and audit row with the fast lane and without it", async () => {
    for (const [what, who, options, expectedLane] of CALLS) {
      const answers = []
      let lane: string | undefined
      for (const gateway of [fast, effectOnly] as Array<Lane>) {
        const k = keys.get(gateway)!
        const key = who === "none" ? null : who === "bad" ? `sp_${"0".repeat(32)}` : k[who]
        // The first call of a key fills this replica's caches (a key is kept 500 ms), the next one is the call the fast lane can take.
        await request(gateway.url, "/api/query", { ...options, key })
        if (key !== null) await request(gateway.url, "/api/query", { key, body: { connection_name: "pg", sql: "select 1" } })
        const result = await request(gateway.url, "/api/query", { ...options, key })
        answers.push(await seen(gateway, k.admin, result))
        const id = String(result.headers["x-request-id"])
        if (gateway === fast) lane = fast.lanes.answered.has(id) ? "fast" : fast.lanes.handedOff.has(id) ? "handed off" : "app"
      }
      expect([what, lane, answers[0]]).toEqual([what, expectedLane, answers[1]])
    }
  }, 60_000)
})
