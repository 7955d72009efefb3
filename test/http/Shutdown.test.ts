import * as http from "node:http"
import * as net from "node:net"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Eventually"
import { freePort, type GatewayProcess, localKey, startGateway } from "../support/Gateway"
import { request } from "../support/Http"
import { Relay } from "../support/Relay"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const DEADLINE_MS = 2000
/** Process start-up of the teardown aside, the exit comes within the deadline; this is the clock's slack. */
const SLACK_MS = 400
// The cut stream's teardown (its statement stopped, its end audited) gets a quarter of the deadline: 1.5 s here, for a loaded machine.
const STREAM_DEADLINE_MS = 6000
// The drain waits on a query the test itself holds until it has checked the sockets: on a loaded machine the test's own steps took most of 2 s (CI, 2026-11-29).
const DRAIN_DEADLINE_MS = 4000
const ENV = { SP_SHUTDOWN_TIMEOUT_SECONDS: String(DEADLINE_MS / 1000), SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" }

interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/** One client TCP connection speaking HTTP/1.1 by hand, so the test decides when each byte goes out. */
const openConnection = (port: number) =>
  new Promise<{
    readonly write: (text: string) => void
    /** The next whole response (content-length bodies only); fails if the socket closes first. */
    readonly response: (timeoutMs: number) => Promise<RawResponse>
    /** Resolves when the server has closed the socket (the time it closed). */
    readonly closed: Promise<number>
    readonly isClosed: () => boolean
  }>((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1")
    let buffered = ""
    let closedAt: number | null = null
    let waiter: (() => void) | null = null
    const closed = new Promise<number>((done) =>
      socket.on("close", () => {
        closedAt = Date.now()
        done(closedAt)
        waiter?.()
      })
    )
    socket.setEncoding("utf8")
    socket.on("error", () => undefined)
    socket.on("data", (chunk: string) => {
      buffered += chunk
      waiter?.()
    })
    const parse = (): RawResponse | null => {
      const end = buffered.indexOf("\r\n\r\n")
      if (end < 0) return null
      const [statusLine, ...lines] = buffered.slice(0, end).split("\r\n")
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]))
      const length = Number(headers["content-length"] ?? 0)
      if (Buffer.byteLength(buffered.slice(end + 4)) < length) return null
      const body = buffered.slice(end + 4, end + 4 + length)
      buffered = buffered.slice(end + 4 + length)
      return { status: Number(statusLine!.split(" ")[1]), headers, body }
    }
    const response = (timeoutMs: number) =>
      new Promise<RawResponse>((done, fail) => {
        const timer = setTimeout(() => fail(new Error(`no response within ${timeoutMs} ms (socket ${closedAt === null ? "still open" : "closed"})`)), timeoutMs)
        const check = () => {
          const parsed = parse()
          if (parsed !== null || closedAt !== null) {
            clearTimeout(timer)
            waiter = null
            if (parsed !== null) done(parsed)
            else fail(new Error("the socket closed without a response"))
          }
        }
        waiter = check
        check()
      })
    socket.once("connect", () =>
      resolve({ write: (text) => void socket.write(text), response, closed, isClosed: () => closedAt !== null })
    )
    socket.once("error", reject)
  })

const head = (method: string, path: string, key: string, body?: string) =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${key}\r\n` +
  (body === undefined ? "\r\n" : `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`)

const within = <A>(promise: Promise<A>, ms: number, what: string) =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms))])

/** SIGTERM; resolves with the exit code and how long the process took to exit. */
const terminate = (gateway: GatewayProcess) => {
  const sent = Date.now()
  const exited = new Promise<{ code: number | null; afterMs: number }>((resolve) =>
    gateway.process.once("exit", (code) => resolve({ code, afterMs: Date.now() - sent }))
  )
  gateway.process.kill("SIGTERM")
  return { sent, exited }
}

describe.skipIf(!hasPostgres)("SIGTERM: the gateway drains and exits within SP_SHUTDOWN_TIMEOUT_SECONDS", () => {
  let customers: TestDatabase
  const stores: Array<TestDatabase> = []
  const gateways: Array<GatewayProcess> = []

  /** A gateway on its own PostgreSQL store (read after it exits) with a connection to the customer database. */
  const gatewayWithConnection = async (deadlineMs = DEADLINE_MS) => {
    const store = await createTestDatabase()
    stores.push(store)
    const gateway = await startGateway({ databaseUrl: store.url, env: { ...ENV, SP_SHUTDOWN_TIMEOUT_SECONDS: String(deadlineMs / 1000) } })
    gateways.push(gateway)
    const admin = await localKey(gateway)
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: customers.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    return { gateway, admin, store }
  }

  const auditOf = (store: TestDatabase, requestIds: Array<string>) =>
    store.query<{ request_id: string; event_type: string; route: string; status: number; outcome: string }>(
      "select request_id, event_type, route, status, outcome from gateway_audit_logs where request_id = any($1) order by id",
      [requestIds]
    )

  /** A gateway whose store is reached through a relay the test can silence. */
  const gatewayBehindRelay = async () => {
    const store = await createTestDatabase()
    stores.push(store)
    const relay = new Relay(await freePort())
    relays.push(relay)
    await relay.open()
    const viaRelay = new URL(store.url)
    viaRelay.port = String(relay.port)
    const gateway = await startGateway({ databaseUrl: viaRelay.toString(), env: { ...ENV, SP_STORE_TIMEOUT_SECONDS: "60" } })
    gateways.push(gateway)
    return { gateway, admin: await localKey(gateway), relay }
  }

  const relays: Array<Relay> = []
  let keepAlive: Awaited<ReturnType<typeof gatewayWithConnection>>
  let streaming: Awaited<ReturnType<typeof gatewayWithConnection>>
  let stalling: Awaited<ReturnType<typeof gatewayBehindRelay>>

  beforeAll(async () => {
    customers = await createTestDatabase()
    await customers.query("create table held (id int)")
    ;[keepAlive, streaming, stalling] = await Promise.all([gatewayWithConnection(DRAIN_DEADLINE_MS), gatewayWithConnection(STREAM_DEADLINE_MS), gatewayBehindRelay()])
  })
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.kill()))
    for (const relay of relays) {
      relay.reset()
      await relay.refuse()
    }
    await Promise.all([...stores, customers].map((d) => d?.drop()))
  })

  it("closes idle keep-alive sockets at once, answers what is in flight with Connection: close, leaves no client waiting, and keeps every answered request's audit row", async () => {
    const { gateway, admin, store } = keepAlive
    const idle = await openConnection(gateway.port)
    idle.write(head("GET", "/api/plan", admin))
    const plan = await idle.response(5000)
    expect(plan.status).toBe(200)

    // A query held by a table lock until the test lets it go: it is in flight when SIGTERM comes.
    const locker = new pg.Client({ connectionString: customers.url })
    locker.on("error", () => undefined)
    await locker.connect()
    await locker.query("begin; lock table held in access exclusive mode")
    const busy = await openConnection(gateway.port)
    const query = JSON.stringify({ connection_name: "pg", sql: "select count(*) as n from held" })
    busy.write(head("POST", "/api/query", admin, query) + query)
    await eventually(
      () => customers.query("select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock'", [customers.name]),
      (rows) => rows[0]!.n > 0,
      "the gateway's query waiting on the lock",
      10_000,
      50
    )
    // The metrics feed never ends by itself; its clients reconnect (to another replica).
    const feed = await openConnection(gateway.port)
    feed.write(head("GET", "/api/metrics", admin))
    // A request whose headers arrived before SIGTERM and whose body arrives after it.
    const partial = await openConnection(gateway.port)
    const key = JSON.stringify({ name: "made-while-stopping", scopes: ["read"] })
    partial.write(head("POST", "/api/keys", admin, key))
    await new Promise((r) => setTimeout(r, 200))

    const { sent, exited } = terminate(gateway)
    partial.write(key)
    const created = await partial.response(DRAIN_DEADLINE_MS)
    expect(created.status).toBe(201)
    expect(created.headers["connection"]).toBe("close")
    expect((await within(idle.closed, 1000, "closing the idle keep-alive socket")) - sent).toBeLessThan(1000)
    expect((await within(feed.closed, 1000, "ending the metrics event stream")) - sent).toBeLessThan(1000)

    await locker.query("commit")
    await locker.end()
    const counted = await busy.response(DRAIN_DEADLINE_MS)
    expect(counted.status).toBe(200)
    expect(counted.headers["connection"]).toBe("close")
    // A client that sends again on that socket finds it closed rather than waiting for an answer that never comes.
    if (!busy.isClosed()) busy.write(head("GET", "/api/plan", admin))
    await within(busy.closed, 1000, "closing the socket after its last answer")
    await within(partial.closed, 1000, "closing the socket after its last answer")

    const exit = await within(exited, DRAIN_DEADLINE_MS + 5000, "the exit")
    expect(exit.code, gateway.logs().slice(-3000)).toBe(0)
    expect(exit.afterMs).toBeLessThan(DRAIN_DEADLINE_MS + SLACK_MS)

    const answered = [plan, counted, created].map((r) => r.headers["x-request-id"]!)
    const rows = await auditOf(store, answered)
    expect(rows.map((r) => [r.request_id, r.route, r.status]).sort()).toEqual(
      [
        [answered[0], "/api/plan", 200],
        [answered[1], "/api/query", 200],
        [answered[2], "/api/keys", 201]
      ].sort()
    )
  })

  it("cuts a stream its client reads too slowly at the deadline, exits 0 within it, logs what it cut, and records how the stream ended", async () => {
    const { gateway, admin, store } = streaming
    const body = JSON.stringify({ connection_name: "pg", sql: "select g, repeat('x', 200) from generate_series(1, 5000000) g", row_limit: 1_000_000, timeout_seconds: 300 })
    let requestId = ""
    let response: http.IncomingMessage | undefined
    const ended = new Promise<string>((resolve) => {
      const req = http.request(
        new URL("/api/query", gateway.url),
        { method: "POST", headers: { "content-type": "application/json", "x-api-key": admin, accept: "application/x-ndjson", "content-length": Buffer.byteLength(body) } },
        (res) => {
          requestId = String(res.headers["x-request-id"])
          response = res
          // Reads the first chunk, then stops reading: the gateway's writes back up.
          res.once("data", () => res.pause())
          res.on("error", () => undefined)
          res.once("close", () => resolve(res.complete ? "ended" : "cut"))
        }
      )
      req.on("error", () => resolve("cut"))
      req.end(body)
    })
    await eventually(async () => requestId, (id) => id !== "", "the stream's first bytes", 10_000, 50)
    await new Promise((r) => setTimeout(r, 300))

    const { exited } = terminate(gateway)
    const exit = await within(exited, STREAM_DEADLINE_MS + 5000, "the exit")
    expect(exit.code, gateway.logs().slice(-3000)).toBe(0)
    expect(exit.afterMs).toBeLessThan(STREAM_DEADLINE_MS + SLACK_MS)
    // What the gateway had sent before the cut is read, then the response ends unfinished.
    response!.resume()
    expect(await within(ended, 5000, "the stream's end")).toBe("cut")
    expect(gateway.logs()).toMatch(/cut 1 request still in flight.*POST \/api\/query/)

    const rows = await auditOf(store, [requestId])
    expect(rows.find((r) => r.event_type === "query")).toMatchObject({ route: "/api/query", status: 200, outcome: "success" })
    expect(rows.find((r) => r.event_type === "query_stream_end")).toMatchObject({ outcome: "error" })
  })

  it("a teardown that cannot finish (the store stopped answering) is cut at the deadline: the process exits 1 and says why", async () => {
    const { gateway, admin, relay } = stalling
    relay.blackhole()
    const stuck = request(gateway.url, "/api/keys", { key: admin, body: { name: "never-stored", scopes: ["read"] } }).catch((error: Error) => error)
    await new Promise((r) => setTimeout(r, 300))

    const { exited } = terminate(gateway)
    const exit = await within(exited, DEADLINE_MS + 5000, "the exit")
    expect(exit.afterMs).toBeLessThan(DEADLINE_MS + SLACK_MS)
    expect(exit.code, gateway.logs().slice(-3000)).toBe(1)
    expect(gateway.logs()).toMatch(/cut 1 request still in flight.*POST \/api\/keys/)
    expect(gateway.logs()).toContain("the teardown did not finish within SP_SHUTDOWN_TIMEOUT_SECONDS (2 s)")
    expect(await stuck).toBeInstanceOf(Error)
  })
})
