import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type GatewayProcess, localKey, startGateway } from "../support/Gateway"
import { type HttpResult, request } from "../support/Http"
import { Relay } from "../support/Relay"
import {
  createMariaDatabase,
  createTestDatabase,
  type MariaDatabase,
  mysqlAvailable,
  mysqlConnection,
  postgresAvailable,
  type TestDatabase,
  withAdminClient
} from "../support/Servers"

const skip = !(await postgresAvailable()) || !(await mysqlAvailable())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
// Long enough that an answer within FAULT_ANSWER_MS can only come from the fault, not from the statement's timeout.
const TIMEOUT_SECONDS = 30
const FAULT_ANSWER_MS = 5_000
// A stalled database never answers: the request's own timeout is what ends it, and within a second of it.
const STALL_TIMEOUT_SECONDS = 3
const DEADLINE_SLACK_MS = 1_000
// Longer than the stall timeout, so a request's own timeout ends it first.
const DARK_CONNECT_SECONDS = 4

interface Answer {
  readonly status: number
  readonly code: string | undefined
  /** When the answer was complete. */
  readonly at: number
}

interface Streamed extends Answer {
  readonly head: boolean
  readonly rows: number
  readonly end: boolean
}

/** A streamed query whose reader takes the first bytes, then stops reading until `hold` settles (the statement stays open), then reads to the end. */
const streamQuery = (gateway: GatewayProcess, key: string, body: object, hold: Promise<unknown>) =>
  new Promise<Streamed>((resolve, reject) => {
    const payload = JSON.stringify(body)
    const req = http.request(`${gateway.url}/api/query`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload), "x-api-key": key, accept: "application/x-ndjson" }
    })
    req.on("error", reject)
    req.on("response", (res) => {
      let text = ""
      let held = false
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        text += chunk
        if (held) return
        held = true
        res.pause()
        void hold.finally(() => res.resume())
      })
      res.on("error", reject)
      res.on("end", () => {
        const lines = text.split("\n").filter((line) => line !== "")
        const parts = lines.map((line) => JSON.parse(line) as { type?: string; code?: string } | Array<unknown>)
        const tagged = parts.filter((p): p is { type?: string; code?: string } => !Array.isArray(p))
        const failure = tagged.find((p) => p.type === "error" || p.code !== undefined)
        resolve({
          status: res.statusCode ?? 0,
          code: failure?.code,
          at: Date.now(),
          head: tagged.some((p) => p.type === "head"),
          rows: parts.filter(Array.isArray).length,
          end: tagged.some((p) => p.type === "end")
        })
      })
    })
    req.end(payload)
  })

const answerOf = (result: HttpResult): Answer => ({ status: result.status, code: result.json?.code, at: Date.now() })

const alive = (gateway: GatewayProcess) => gateway.process.exitCode === null && gateway.process.signalCode === null

/** The pids of the gateway's SQLite reader processes. */
const sqliteReaders = (gateway: GatewayProcess) =>
  fs
    .readFileSync(`/proc/${gateway.process.pid}/task/${gateway.process.pid}/children`, "utf8")
    .split(" ")
    .filter((pid) => pid !== "" && fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("SqliteProcess"))
    .map(Number)

describe("a customer database that fails under the gateway never takes it down", () => {
  let gateway: GatewayProcess
  let admin: string
  let querier: string
  let database: TestDatabase
  let maria: MariaDatabase
  let pgRelay: Relay
  let mariaRelay: Relay
  // Databases that are down (nothing listens) when they are first used.
  const downs: Record<"pg" | "maria", Relay> = {} as never
  let lateFile: string
  // Stalled databases: blackholed once the pool has connected, and from the start.
  const stalls: Record<"pg" | "maria", { late: Relay; early: Relay }> = {} as never

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    maria = await createMariaDatabase("sluice_faults")
    pgRelay = new Relay(await freePort(), { host: "127.0.0.1", port: 5432 })
    mariaRelay = new Relay(await freePort(), { host: "127.0.0.1", port: 3306 })
    await pgRelay.open()
    await mariaRelay.open()
    for (const [kind, port] of [["pg", 5432], ["maria", 3306]] as const) {
      stalls[kind] = { late: new Relay(await freePort(), { host: "127.0.0.1", port }), early: new Relay(await freePort(), { host: "127.0.0.1", port }) }
      await stalls[kind].late.open()
      await stalls[kind].early.open()
      stalls[kind].early.blackhole()
      downs[kind] = new Relay(await freePort(), { host: "127.0.0.1", port })
    }
    gateway = await startGateway({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "100000", SP_PER_KEY_RPM: "100000" } })
    admin = await localKey(gateway)
    querier = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "querier", scopes: ["query"] } })).json.key
    const liteFile = path.join(gateway.dataDir, "faults.sqlite")
    const lite = new Database(liteFile)
    lite.exec("create table t (id int); insert into t values (1)")
    lite.close()
    lateFile = path.join(gateway.dataDir, "later.sqlite")
    const connections = [
      { name: "pg_relayed", db_type: "postgresql", host: "127.0.0.1", port: pgRelay.port, database: database.name, username: "root" },
      { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" },
      { ...mysqlConnection("maria_relayed", maria.name), host: "127.0.0.1", port: mariaRelay.port },
      mysqlConnection("maria", maria.name),
      { name: "lite", db_type: "sqlite", database: liteFile },
      { name: "pg_stalled", db_type: "postgresql", host: "127.0.0.1", port: stalls.pg.late.port, database: database.name, username: "root", query_timeout: STALL_TIMEOUT_SECONDS },
      { name: "pg_dark", db_type: "postgresql", host: "127.0.0.1", port: stalls.pg.early.port, database: database.name, username: "root", connection_timeout: DARK_CONNECT_SECONDS },
      { ...mysqlConnection("maria_stalled", maria.name), host: "127.0.0.1", port: stalls.maria.late.port, query_timeout: STALL_TIMEOUT_SECONDS },
      { ...mysqlConnection("maria_dark", maria.name), host: "127.0.0.1", port: stalls.maria.early.port, connection_timeout: DARK_CONNECT_SECONDS },
      { name: "pg_down", db_type: "postgresql", host: "127.0.0.1", port: downs.pg.port, database: database.name, username: "root" },
      { ...mysqlConnection("maria_down", maria.name), host: "127.0.0.1", port: downs.maria.port },
      { name: "lite_later", db_type: "sqlite", database: lateFile }
    ]
    for (const body of connections) expect((await request(gateway.url, "/api/connections", { key: admin, body })).status).toBe(201)
  })
  afterAll(async () => {
    await gateway?.kill()
    await pgRelay?.cut()
    await mariaRelay?.cut()
    for (const relay of [...Object.values(stalls).flatMap((s) => [s.late, s.early]), ...Object.values(downs)]) await relay.cut()
    await database?.drop()
    await maria?.drop()
  })

  const query = (connection: string, sql: string, extra: object = {}) =>
    request(gateway.url, "/api/query", { key: querier, body: { connection_name: connection, sql, timeout_seconds: TIMEOUT_SECONDS, ...extra } }).then(answerOf)

  /** The gateway answers, the faulted connection serves the next statement, and so does a connection to the same server that was never touched. */
  const stillServing = async (faulted: string, other: string) => {
    expect(alive(gateway), gateway.logs()).toBe(true)
    expect((await request(gateway.url, "/health")).status).toBe(200)
    for (const name of [faulted, other]) {
      const next = await request(gateway.url, "/api/query", { key: querier, body: { connection_name: name, sql: "select 1 as one", timeout_seconds: 5 } })
      expect([name, next.status, next.json?.rows], next.text).toEqual([name, 200, [[1]]])
    }
  }

  /** Runs `load`, lets it get under way, applies `fault`, and checks every affected request got a database error soon after, not a hang. */
  const underFault = async (load: (hold: Promise<unknown>) => Array<Promise<Answer>>, fault: () => Promise<unknown>) => {
    let release!: () => void
    const hold = new Promise<void>((r) => (release = r))
    const answers = load(hold)
    await sleep(1_000)
    const faultAt = Date.now()
    await fault()
    await sleep(300)
    release()
    const settled = await Promise.all(answers)
    for (const answer of settled) {
      // A stream whose head was sent ends with an error line instead of its end line.
      const streamed: Partial<Streamed> = answer
      const status = streamed.head === true ? (streamed.end === true ? "complete" : 502) : answer.status
      expect([status, answer.code]).toEqual([502, "database_unavailable"])
      expect(answer.at - faultAt).toBeLessThan(FAULT_ANSWER_MS)
    }
    return settled
  }

  /** Waits (a few seconds at most) until no statement of the load runs on the server any more: a lost session's statement was cancelled, not left to its timeout. */
  const drained = async (running: () => Promise<number>) => {
    const deadline = Date.now() + FAULT_ANSWER_MS
    while ((await running()) > 0 && Date.now() < deadline) await sleep(100)
    expect(await running()).toBe(0)
  }
  const pgRunning = async () =>
    (
      await database.query<{ n: number }>(
        "select count(*)::int as n from pg_stat_activity where datname = $1 and state = 'active' and query like '%generate_series(1, %000000000)%' and pid <> pg_backend_pid()",
        [database.name]
      )
    )[0]!.n
  const mariaRunning = async () =>
    ((await maria.admin.query("select count(*) as n from information_schema.processlist where db = ? and info like '%cross join big%' and id <> connection_id()", [maria.name])) as any)[0][0].n

  const pgLoad = (hold: Promise<unknown>) => [
    query("pg_relayed", "select count(*) from generate_series(1, 3000000000)"),
    // Rows arriving slowly: the capped read is mid-result when the session goes.
    query("pg_relayed", "select g, repeat('x', 1000) as pad from generate_series(1, 2000000000) g where g % 5000000 = 0", { row_limit: 1000 }),
    streamQuery(gateway, querier, { connection_name: "pg_relayed", sql: "select count(*) from generate_series(1, 3000000000)", timeout_seconds: TIMEOUT_SECONDS }, hold),
    // A stream whose reader stopped reading: the cursor is open with rows still to fetch.
    streamQuery(
      gateway,
      querier,
      { connection_name: "pg_relayed", sql: "select g, repeat('x', 200) as pad from generate_series(1, 1000000) g", row_limit: 1_000_000, timeout_seconds: TIMEOUT_SECONDS },
      hold
    )
  ]

  it.skipIf(skip)("PostgreSQL: busy sessions terminated on the server fail with 502, and the gateway keeps serving", async () => {
    const terminate = () =>
      withAdminClient((c) => c.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'sluice' and datname = $1", [database.name]))
    await underFault(pgLoad, terminate)
    await drained(pgRunning)
    await stillServing("pg_relayed", "maria")
  })

  it.skipIf(skip)("PostgreSQL: busy sessions reset on the network fail with 502, and the gateway keeps serving", async () => {
    await underFault(pgLoad, async () => pgRelay.reset())
    await drained(pgRunning)
    await stillServing("pg_relayed", "pg")
  })

  it.skipIf(skip)("PostgreSQL: a connection's Test reset while it waits on a stalled database fails at the tcp step", async () => {
    expect((await request(gateway.url, "/api/connections/pg_relayed/test", { method: "POST", key: admin })).json).toMatchObject({ ok: true })
    pgRelay.blackhole()
    const tested = request(gateway.url, "/api/connections/pg_relayed/test", { method: "POST", key: admin })
    await sleep(500)
    pgRelay.reset()
    await pgRelay.pass()
    expect((await tested).json).toMatchObject({ ok: false, step: "tcp" })
    await stillServing("pg_relayed", "pg")
  })

  const mariaLoad = (hold: Promise<unknown>) => [
    query("maria_relayed", "select count(*) from big a cross join big b cross join big c"),
    streamQuery(
      gateway,
      querier,
      { connection_name: "maria_relayed", sql: "select a.id, repeat('x', 200) as pad from big a cross join big b", row_limit: 1_000_000, timeout_seconds: TIMEOUT_SECONDS },
      hold
    )
  ]

  it.skipIf(skip)("MariaDB: busy sessions killed on the server fail with 502 at once, not at their timeout", async () => {
    await underFault(mariaLoad, () => maria.killSessions())
    await drained(mariaRunning)
    await stillServing("maria_relayed", "pg")
  })

  it.skipIf(skip)("MariaDB: busy sessions reset on the network fail with 502 at once, not at their timeout", async () => {
    await underFault(mariaLoad, async () => mariaRelay.reset())
    await drained(mariaRunning)
    await stillServing("maria_relayed", "maria")
  })

  it.skipIf(skip)("SQLite: a reader process killed mid-statement fails that statement, and the next one runs at once", async () => {
    const slow = "with recursive r(n) as (select 1 union all select n + 1 from r where n < 1000000000) select count(*) from r"
    // The reader is up before the statement that is killed under it.
    expect((await query("lite", "select id from t")).status).toBe(200)
    const busy = query("lite", slow)
    await sleep(1_000)
    const readers = sqliteReaders(gateway)
    expect(readers.length).toBeGreaterThan(0)
    const killedAt = Date.now()
    for (const pid of readers) process.kill(pid, "SIGKILL")
    const failed = await busy
    expect(failed.status).toBeGreaterThanOrEqual(400)
    expect(failed.at - killedAt).toBeLessThan(FAULT_ANSWER_MS)
    const started = Date.now()
    const next = await request(gateway.url, "/api/query", { key: querier, body: { connection_name: "lite", sql: "select id from t", timeout_seconds: 5 } })
    expect([next.status, next.json?.rows], next.text).toEqual([200, [[1]]])
    expect(Date.now() - started).toBeLessThan(3_000)
    await stillServing("lite", "pg")
  })

  /** `count` requests at once (more than a pool holds, so some wait for a connection), each answered with how long it took. */
  const concurrently = (count: number, send: () => Promise<Answer>) =>
    Promise.all(
      Array.from({ length: count }, async () => {
        const started = Date.now()
        const answer = await send()
        return { status: answer.status, code: answer.code, ms: answer.at - started }
      })
    )
  const withinTimeout = (answers: ReadonlyArray<{ status: number; code: string | undefined; ms: number }>, timeoutSeconds: number) => {
    for (const answer of answers) {
      expect([answer.status, answer.code]).toEqual([504, "query_timeout"])
      expect(answer.ms).toBeGreaterThanOrEqual(timeoutSeconds * 1000 - 100)
      expect(answer.ms).toBeLessThanOrEqual(timeoutSeconds * 1000 + DEADLINE_SLACK_MS)
    }
  }
  it.skipIf(skip)("a database that stalls once connected: timeout_seconds (or the connection's query_timeout) bounds every request, the wait for a connection included", async () => {
    for (const kind of ["pg", "maria"] as const) {
      const name = `${kind}_stalled`
      expect((await query(name, "select 1 as one")).status).toBe(200)
      stalls[kind].late.blackhole()
      const stream = () =>
        streamQuery(gateway, querier, { connection_name: name, sql: "select 1 as one", timeout_seconds: STALL_TIMEOUT_SECONDS }, Promise.resolve())
      const [named, defaulted, streamed] = await Promise.all([
        concurrently(6, () => query(name, "select 1 as one", { timeout_seconds: STALL_TIMEOUT_SECONDS })),
        concurrently(2, () =>
          request(gateway.url, "/api/query", { key: querier, body: { connection_name: name, sql: "select 2 as two" } }).then(answerOf)
        ),
        concurrently(1, stream)
      ])
      withinTimeout([...named, ...defaulted, ...streamed], STALL_TIMEOUT_SECONDS)
      stalls[kind].late.reset()
      await stalls[kind].late.pass()
    }
    await stillServing("pg_stalled", "maria_stalled")
  })

  it.skipIf(skip)("a database that was down when first used serves the next request as soon as it is back (a failed open is not kept)", async () => {
    for (const name of ["pg_down", "maria_down", "lite_later"]) {
      const down = await query(name, "select 1 as one")
      expect([name, down.status, down.code]).toEqual([name, 502, "database_unavailable"])
    }
    await downs.pg.open()
    await downs.maria.open()
    const lite = new Database(lateFile)
    lite.exec("select 1")
    lite.close()
    for (const name of ["pg_down", "maria_down", "lite_later"]) {
      const back = await request(gateway.url, "/api/query", { key: querier, body: { connection_name: name, sql: "select 1 as one", timeout_seconds: 5 } })
      expect([name, back.status, back.json?.rows], back.text).toEqual([name, 200, [[1]]])
    }
  })

  it.skipIf(skip)("a database that never answered: a connection's Test fails at the tcp step at the connect timeout", async () => {
    for (const name of ["pg_dark", "maria_dark"]) {
      const started = Date.now()
      const tested = await request(gateway.url, `/api/connections/${name}/test`, { method: "POST", key: admin })
      expect([name, tested.json.ok, tested.json.step], tested.text).toEqual([name, false, "tcp"])
      expect(Date.now() - started).toBeGreaterThanOrEqual(DARK_CONNECT_SECONDS * 1000 - 100)
      expect(Date.now() - started).toBeLessThanOrEqual(DARK_CONNECT_SECONDS * 1000 + DEADLINE_SLACK_MS)
    }
  })

  it.skipIf(skip)("a database that never answered: the first requests (and the pool they open) end at their timeout too", async () => {
    for (const name of ["pg_dark", "maria_dark"]) {
      const answers = await concurrently(3, () => query(name, "select 1 as one", { timeout_seconds: STALL_TIMEOUT_SECONDS }))
      withinTimeout(answers, STALL_TIMEOUT_SECONDS)
    }
    expect(alive(gateway)).toBe(true)
  })
})
