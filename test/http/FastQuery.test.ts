import { SqlClient } from "@effect/sql"
import { Effect, type ManagedRuntime } from "effect"
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Lane, leaveMidBody, newestRows, startLanesSideBySide, untilTaken } from "../support/FastLane"
import { request, type RequestOptions } from "../support/Http"
import { postgresAvailable } from "../support/Servers"

const skip = !(await postgresAvailable())

const SETTINGS = { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" }


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
  let fast: Awaited<ReturnType<typeof startLanesSideBySide>>["fast"]
  let effectOnly: Awaited<ReturnType<typeof startLanesSideBySide>>["effectOnly"]
  let keys: Awaited<ReturnType<typeof startLanesSideBySide>>["keys"]
  let stop = async () => {}

  beforeAll(async () => {
    if (skip) return
    ;({ fast, effectOnly, keys, stop } = await startLanesSideBySide(SETTINGS))
  }, 60_000)
  afterAll(() => stop())


  /**
   * Each call as a client sends it, with the key it uses, and which lane answers it once this
   * replica's caches hold the key: the fast lane, the app after the fast lane read the body (it
   * does not decode), or the app alone (a key or scope the lane cannot admit is left untouched).
   */
  const CALLS: ReadonlyArray<readonly [string, "querier" | "reader" | "none" | "bad", RequestOptions, "fast" | "handed off" | "app"]> = [
    ["a point lookup", "querier", { body: { connection_name: "pg", sql: "select id, name from people where id = 7" } }, "fast"],
    ["a masked column", "querier", { body: { connection_name: "pg", sql: "select id, email from people order by id limit 3" } }, "fast"],
    ["a truncated result", "querier", { body: { connection_name: "pg", sql: "select id from people order by id", row_limit: 5 } }, "fast"],
    ["a write, refused", "querier", { body: { connection_name: "pg", sql: "delete from people" } }, "fast"],
    ["a failing statement", "querier", { body: { connection_name: "pg", sql: "select nope from people" } }, "fast"],
    ["a function the guard refuses", "querier", { body: { connection_name: "pg", sql: "select pg_sleep(3)", timeout_seconds: 1 } }, "fast"],
    ["a statement past its timeout", "querier", { body: { connection_name: "pg", sql: "select count(*) from generate_series(1, 1000000000)", timeout_seconds: 1 } }, "fast"],
    ["an unknown connection", "querier", { body: { connection_name: "nope", sql: "select 1" } }, "fast"],
    ["a row limit over the buffered answer's", "querier", { body: { connection_name: "pg", sql: "select 1", row_limit: 200_000 } }, "fast"],
    ["a row limit over any answer's", "querier", { body: { connection_name: "pg", sql: "select 1", row_limit: 10_000_000 } }, "handed off"],
    ["a body that does not decode", "querier", { body: { connection_name: "pg", sql: "select 1", extra: true } }, "handed off"],
    ["a body that is not JSON", "querier", { rawBody: "{nope", headers: { "content-type": "application/json" } }, "handed off"],
    ["a JSON body nested too deep", "querier", { rawBody: `${"[".repeat(200)}${"]".repeat(200)}`, headers: { "content-type": "application/json" } }, "handed off"],
    ["a key without the query scope", "reader", { body: { connection_name: "pg", sql: "select 1" } }, "app"],
    ["no key", "none", { body: { connection_name: "pg", sql: "select 1" } }, "app"],
    ["an unknown key", "bad", { body: { connection_name: "pg", sql: "select 1" } }, "app"],
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
        // The first call of a key fills this replica's caches, the next one is the call the fast lane can take. A key is kept
        // 500 ms from its verification, so on a busy machine the call may find it gone (and go to the app): it is made again.
        await request(gateway.url, "/api/query", { ...options, key })
        for (let attempt = 0; attempt < 4; attempt++) {
          if (key !== null) await request(gateway.url, "/api/query", { key, body: { connection_name: "pg", sql: "select 1" } })
          const result = await request(gateway.url, "/api/query", { ...options, key })
          const id = String(result.headers["x-request-id"])
          if (gateway === fast) lane = fast.lanes.answered.has(id) ? "fast" : fast.lanes.handedOff.has(id) ? "handed off" : "app"
          if (gateway !== fast || lane === expectedLane || attempt === 3) {
            answers.push(await seen(gateway, k.admin, result))
            break
          }
        }
      }
      expect([what, lane, answers[0]]).toEqual([what, expectedLane, answers[1]])
    }
  }, 60_000)

  /** A query the fast lane answers itself: made again (after a call that renews the key in memory) while it finds the key gone. */
  const onFastLane = async (body: Record<string, unknown>) => {
    const key = keys.get(fast)!.querier
    let result = await request(fast.url, "/api/query", { key, body })
    for (let attempt = 0; attempt < 4 && !fast.lanes.answered.has(String(result.headers["x-request-id"])); attempt++) {
      await request(fast.url, "/api/query", { key, body: { connection_name: "pg", sql: "select 1" } })
      result = await request(fast.url, "/api/query", { key, body })
    }
    return result
  }

  it.skipIf(skip)("a result value that cannot be written as JSON is a 500 on both lanes, and nothing escapes the fast lane's callbacks", async () => {
    const uncaught: Array<unknown> = []
    const record = (error: unknown) => void uncaught.push(error)
    process.on("uncaughtException", record)
    try {
      // A json value nested 5,000 deep: PostgreSQL takes it, JSON.stringify cannot write it.
      const body = { connection_name: "pg", sql: "select (repeat('[', 5000) || repeat(']', 5000))::json as j" }
      const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no answer in 10 s")), 10_000))
      const onFast = await Promise.race([onFastLane(body), timeout])
      const onEffect = await request(effectOnly.url, "/api/query", { key: keys.get(effectOnly)!.querier, body })
      expect({ fast: [onFast.status, onFast.json?.code, fast.lanes.answered.has(String(onFast.headers["x-request-id"]))], uncaught: uncaught.map(String) }).toEqual({
        fast: [500, "internal_error", true],
        uncaught: []
      })
      expect([onEffect.status, onEffect.json?.code]).toEqual([500, "internal_error"])
      // The pool and the lane go on.
      const after = await onFastLane({ connection_name: "pg", sql: "select 1 as one" })
      expect([after.status, fast.lanes.answered.has(String(after.headers["x-request-id"]))]).toEqual([200, true])
    } finally {
      process.off("uncaughtException", record)
    }
  }, 30_000)

  it.skipIf(skip)("a result's share of the result memory is held until its response is written", async () => {
    const result = await onFastLane({ connection_name: "pg", sql: "select repeat('x', 1000) from generate_series(1, 1000)" })
    const id = String(result.headers["x-request-id"])
    expect([result.status, fast.lanes.answered.has(id)]).toEqual([200, true])
    expect(fast.memoryAtWrite.get(id)).toBeGreaterThanOrEqual(1_000_000)
  }, 30_000)

  it.skipIf(skip)("a made-up key is refused from the headers, before any body is read, on both lanes", async () => {
    // The head and a first piece of a 2 MiB body that never comes: no lane may wait for it before it refuses the key.
    const headOnly = (port: number) =>
      new Promise<string>((resolve) => {
        const socket = net.connect(port, "127.0.0.1")
        let answer = ""
        socket.on("data", (chunk) => (answer += chunk.toString("latin1")))
        socket.on("error", () => resolve(answer))
        socket.on("connect", () =>
          socket.write(`POST /api/query HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nX-Api-Key: sp_${"0".repeat(32)}\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n{"connection_name":`)
        )
        setTimeout(() => {
          socket.destroy()
          resolve(answer.split("\r\n")[0] ?? "")
        }, 1_500)
      })
    const effectPort = Number(new URL(effectOnly.url).port)
    expect({ fast: await headOnly(fast.port), effect: await headOnly(effectPort) }).toEqual({ fast: "HTTP/1.1 401 Unauthorized", effect: "HTTP/1.1 401 Unauthorized" })
  }, 30_000)

  it.skipIf(skip)("a client that leaves while its audit row is being written is recorded once, as the Effect app records it", async () => {
    const recorded = async (gateway: { url: string; runtime: ManagedRuntime.ManagedRuntime<any, any> }, key: string) => {
      const marker = `left_${Math.random().toString(36).slice(2)}`
      const sqlOf = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => gateway.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, f) as Effect.Effect<A>)
      // The key verified just before, so that neither lane needs the store until the answer's audit row.
      await request(gateway.url, "/api/query", { key, body: { connection_name: "pg", sql: "select 1" } })
      // The audit table held by another transaction: the answer's row waits to be written while the client leaves.
      let locked: () => void = () => {}
      const lockTaken = new Promise<void>((resolve) => (locked = resolve))
      const holding = sqlOf((sql) =>
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`lock table gateway_audit_logs in access exclusive mode`
            locked()
            yield* Effect.sleep("1500 millis")
          })
        )
      )
      await lockTaken
      const body = JSON.stringify({ connection_name: "pg", sql: `select id as ${marker} from people where id = 3` })
      const port = Number(new URL(gateway.url).port)
      await new Promise<void>((resolve) => {
        const socket = net.connect(port, "127.0.0.1")
        socket.on("error", () => resolve())
        socket.on("connect", () => {
          socket.write(`POST /api/query HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nX-Api-Key: ${key}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
          setTimeout(() => {
            socket.destroy()
            resolve()
          }, 500)
        })
      })
      await holding
      await new Promise((resolve) => setTimeout(resolve, 500))
      return sqlOf((sql) => sql<{ status: number }>`select status from gateway_audit_logs where sql like ${`%${marker}%`} order by id`).then((rows) => rows.map((r) => r.status))
    }
    const onFast = await recorded(fast, keys.get(fast)!.querier)
    expect(fast.taken.at(-1)?.handed).toBe(false)
    const onEffect = await recorded(effectOnly, keys.get(effectOnly)!.querier)
    expect({ fast: onFast, effect: onEffect }).toEqual({ fast: onEffect, effect: [200] })
  }, 30_000)

  it.skipIf(skip)("a fault after the gate admitted a request is answered and recorded as the Effect app answers a defect", async () => {
    const uncaught: Array<unknown> = []
    const record = (error: unknown) => void uncaught.push(error)
    process.on("uncaughtException", record)
    try {
      await onFastLane({ connection_name: "pg", sql: "select 1" })
      fast.faults.throwAfterAdmission = true
      const result = await request(fast.url, "/api/query", { key: keys.get(fast)!.querier, body: { connection_name: "pg", sql: "select 2 as fault_after_admission" } })
      expect(fast.faults.throwAfterAdmission).toBe(false)
      const id = String(result.headers["x-request-id"])
      expect({ status: result.status, code: result.json?.code, fast: fast.taken.at(-1)?.handed === false, uncaught }).toEqual({ status: 500, code: "internal_error", fast: true, uncaught: [] })
      const rows = (await request(fast.url, "/api/audit?limit=20", { key: keys.get(fast)!.admin })).json.items as Array<Record<string, unknown>>
      expect(rows.find((row) => row["request_id"] === id)?.["status"]).toBe(500)
    } finally {
      fast.faults.throwAfterAdmission = false
      process.off("uncaughtException", record)
    }
  }, 30_000)

  it.skipIf(skip)("a client that leaves mid-body is counted and recorded as the Effect app records it (499)", async () => {
    const out = []
    for (const gateway of [fast, effectOnly] as Array<Lane>) {
      const k = keys.get(gateway)!
      const body = JSON.stringify({ connection_name: "pg", sql: "select 1 as left_mid_body" })
      const took = await untilTaken(
        gateway === fast ? fast.taken : [0],
        () => request(gateway.url, "/api/query", { key: k.querier, body: { connection_name: "pg", sql: "select 1" } }),
        () => leaveMidBody(gateway.url, "/api/query", { "content-type": "application/json", "x-api-key": k.querier }, body, 20, 300)
      )
      // The fast lane took it (its key was in memory), so what is recorded is its own doing.
      if (gateway === fast) expect(took).toBeGreaterThan(0)
      await new Promise((resolve) => setTimeout(resolve, 500))
      out.push(await newestRows(gateway, k.admin, 2))
    }
    expect(out[0]).toEqual(out[1])
    expect(out[0]![0]).toMatchObject({ status: 499, outcome: "error", route: "/api/query" })
  }, 30_000)
})
