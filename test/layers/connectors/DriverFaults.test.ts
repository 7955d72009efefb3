import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import Database from "better-sqlite3"
import { Effect, Either, Fiber } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { ConnectorError, ConnectorPool } from "../../../layers/connectors/Connector"
import type { ConnectionInput } from "../../../src/domain/Connection"
import { withPool } from "../../support/Connectors"
import { freePort } from "../../support/Gateway"
import { Relay } from "../../support/Relay"
import {
  createMariaDatabase,
  createTestDatabase,
  type MariaDatabase,
  mysqlAvailable,
  mysqlConnection,
  postgresAvailable,
  type TestDatabase,
  withAdminClient
} from "../../support/Servers"
import { SshServer, TUNNEL_PASSWORD } from "../../support/SshServer"

const skip = !(await postgresAvailable()) || !(await mysqlAvailable())
// Far past any answer a fault should get: an outcome that takes this long waited for its timeout.
const STATEMENT_TIMEOUT_MS = 20_000
const PROMPT_MS = 3_000

type Outcome = Either.Either<unknown, ConnectorError>
type Work = (pool: ConnectorPool) => Effect.Effect<unknown, ConnectorError>

/** A statement, a stream read to its end, or a ping: what a pool is doing when the fault comes. */
const statement = (sql: string): Work => (pool) => pool.query(sql, { timeoutMs: STATEMENT_TIMEOUT_MS, maxRows: 10 })
const everyBatch = (sql: string): Work => (pool) =>
  Effect.scoped(
    Effect.flatMap(pool.stream!(sql, { timeoutMs: STATEMENT_TIMEOUT_MS, maxRows: 10_000_000 }), (batches) =>
      Effect.iterate(1, { while: (n) => n > 0, body: () => Effect.map(batches.next, (rows) => rows.length) })
    )
  )
const ping: Work = (pool) => pool.ping
const sleep = (ms: number) => Effect.sleep(`${ms} millis`)

/**
 * Runs `work` on the pool, applies `fault` once it is under way, and returns how it ended and how
 * long after the fault; then the same pool must run a statement again.
 */
const underFault = (pool: ConnectorPool, work: ReadonlyArray<Work>, fault: Effect.Effect<unknown>, options: { before?: Effect.Effect<unknown> } = {}) =>
  Effect.gen(function* () {
    // A first statement opens a session, so there is one to lose while idle.
    yield* pool.query("select 1", { timeoutMs: 5_000, maxRows: 1 })
    yield* sleep(100)
    yield* options.before ?? Effect.void
    const fibers = yield* Effect.forEach(work, (w) => Effect.fork(Effect.either(w(pool))))
    yield* sleep(500)
    const faultAt = Date.now()
    yield* fault
    const outcomes: Array<Outcome> = yield* Effect.forEach(fibers, Fiber.join)
    const ms = Date.now() - faultAt
    const next = yield* Effect.either(Effect.retry(pool.query("select 1 as one", { timeoutMs: 5_000, maxRows: 1 }), { times: 1 }))
    return { outcomes, ms, next }
  })

const failedAt = (outcome: Outcome) => (Either.isLeft(outcome) ? outcome.left.step : "ok")

describe("every driver's errors are handled for its whole life: a fault fails what it hits, promptly, and never the process", () => {
  let pgDb: TestDatabase
  let maria: MariaDatabase
  let relay: Relay
  let dir: string
  const uncaught: Array<unknown> = []
  const record = (error: unknown) => uncaught.push(error)

  beforeAll(async () => {
    if (skip) return
    process.on("uncaughtException", record)
    pgDb = await createTestDatabase()
    maria = await createMariaDatabase("sluice_faults")
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-faults-"))
  })
  afterEach(async () => {
    await relay?.cut()
    // A second error event of a driver comes after the first; give it the time to.
    await new Promise((r) => setTimeout(r, 200))
    expect(uncaught.splice(0).map(String)).toEqual([])
  })
  afterAll(async () => {
    process.off("uncaughtException", record)
    await pgDb?.drop()
    await maria?.drop()
  })

  const relayTo = async (port: number) => {
    relay = new Relay(await freePort(), { host: "127.0.0.1", port })
    await relay.open()
    return relay
  }
  const reset = Effect.suspend(() => {
    relay.reset()
    return Effect.void
  })

  describe("PostgreSQL", () => {
    const heavy = "select count(*) from generate_series(1, 3000000000)"
    const slowRows = "select g, repeat('x', 500) from generate_series(1, 2000000000) g where g % 5000000 = 0"
    const manyRows = "select g, repeat('x', 200) from generate_series(1, 50000000) g"
    const connection = (port: number): ConnectionInput => ({ name: "pg", db_type: "postgresql", host: "127.0.0.1", port, database: pgDb.name, username: "root" })
    const terminate = Effect.promise(() =>
      withAdminClient((c) => c.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'sluice' and datname = $1", [pgDb.name]))
    )

    it.skipIf(skip)("reset on the network: idle sessions, statements, capped reads, cursors and pings in flight", async () => {
      const r = await relayTo(5432)
      const result = await withPool(connection(r.port), (pool) => underFault(pool, [statement(heavy), statement(slowRows), everyBatch(manyRows), ping], reset))
      expect(result.outcomes.slice(0, 3).map(failedAt)).toEqual(["tcp", "tcp", "tcp"])
      expect(result.ms).toBeLessThan(PROMPT_MS)
      expect(Either.isRight(result.next)).toBe(true)
    })

    it.skipIf(skip)("terminated on the server: the statement's session ended is the database's failure (tcp), not the statement's", async () => {
      const result = await withPool(connection(5432), (pool) => underFault(pool, [statement(heavy), statement(slowRows), everyBatch(heavy)], terminate))
      expect(result.outcomes.map(failedAt)).toEqual(["tcp", "tcp", "tcp"])
      expect(result.outcomes.map((o) => (Either.isLeft(o) ? o.left.message : ""))[0]).toMatch(/lost during the statement/)
      expect(result.ms).toBeLessThan(PROMPT_MS)
      expect(Either.isRight(result.next)).toBe(true)
    })

    it.skipIf(skip)("a statement or stream given up on as it starts is cancelled all the same (the server drops a cancel that comes between messages), and its session is not reused", async () => {
      const marked = "select count(*) from generate_series(1, 3000000001) g"
      const running = async () =>
        (
          await pgDb.query<{ n: number }>(
            "select count(*)::int as n from pg_stat_activity where datname = $1 and state = 'active' and query like '%generate_series(1, 3000000001)%' and pid <> pg_backend_pid()",
            [pgDb.name]
          )
        )[0]!.n
      const left = await withPool(connection(5432), (pool) =>
        Effect.gen(function* () {
          yield* pool.query("select 1", { timeoutMs: 5_000, maxRows: 1 })
          // Given up on a few hundred microseconds to a few milliseconds in: some while the preamble and statement arrive.
          for (let i = 0; i < 300; i++) {
            const fiber = yield* Effect.fork(Effect.either((i % 2 === 0 ? statement(marked) : everyBatch(marked))(pool)))
            yield* sleep((i % 12) / 4)
            yield* Fiber.interrupt(fiber)
          }
          const deadline = Date.now() + PROMPT_MS
          while ((yield* Effect.promise(running)) > 0 && Date.now() < deadline) yield* sleep(100)
          // Every session came back, and none owes a given-up statement's answers: each statement reads its own.
          const answers = yield* Effect.forEach(
            Array.from({ length: 40 }, (_, i) => i),
            (i) => Effect.map(pool.query(`select ${i} as n`, { timeoutMs: PROMPT_MS, maxRows: 1 }), (result) => Number(result.rows[0]?.[0])),
            { concurrency: 4 }
          )
          expect(answers).toEqual(Array.from({ length: 40 }, (_, i) => i))
          return yield* Effect.promise(running)
        })
      )
      await withAdminClient((c) => c.query("select pg_cancel_backend(pid) from pg_stat_activity where datname = $1 and query like '%3000000001%'", [pgDb.name]))
      expect(left).toBe(0)
    })

    it.skipIf(skip)("a ping waiting on a stalled database when its connection resets fails, and the process stays up", async () => {
      const r = await relayTo(5432)
      const result = await withPool(connection(r.port), (pool) =>
        underFault(pool, [ping, ping], Effect.zipRight(reset, Effect.promise(() => r.pass())), { before: Effect.sync(() => r.blackhole()) })
      )
      expect(result.outcomes.map(failedAt)).toEqual(["tcp", "tcp"])
      expect(Either.isRight(result.next)).toBe(true)
    })
  })

  describe("MariaDB", () => {
    const heavy = "select count(*) from big a cross join big b cross join big c"
    const manyRows = "select a.id, repeat('x', 200) from big a cross join big b cross join big c"
    const direct = () => mysqlConnection("maria", maria.name) as ConnectionInput & { port: number }
    const connection = (port: number) => ({ ...direct(), host: "127.0.0.1", port })

    it.skipIf(skip)("reset on the network: statements and streams fail at once (not at their timeout), pings and idle connections too", async () => {
      const r = await relayTo(direct().port)
      const result = await withPool(connection(r.port), (pool) => underFault(pool, [statement(heavy), everyBatch(manyRows), ping], reset))
      expect(result.outcomes.slice(0, 2).map(failedAt)).toEqual(["tcp", "tcp"])
      expect(result.ms).toBeLessThan(PROMPT_MS)
      expect(Either.isRight(result.next)).toBe(true)
    })

    it.skipIf(skip)("KILL CONNECTION on the server: statements and streams fail at once as the database's failure", async () => {
      const result = await withPool(direct(), (pool) => underFault(pool, [statement(heavy), everyBatch(manyRows)], Effect.promise(() => maria.killSessions())))
      expect(result.outcomes.map(failedAt)).toEqual(["tcp", "tcp"])
      expect(result.ms).toBeLessThan(PROMPT_MS)
      expect(Either.isRight(result.next)).toBe(true)
    })
  })

  describe("SQLite", () => {
    const readerPids = () =>
      fs
        .readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, "utf8")
        .split(" ")
        .filter((pid) => pid !== "" && fs.existsSync(`/proc/${pid}`) && fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("SqliteProcess"))
        .map(Number)
    const killReaders = Effect.sync(() => readerPids().forEach((pid) => process.kill(pid, "SIGKILL")))

    it.skipIf(skip)("a reader killed mid-statement fails the statement; the next statement starts a new reader", async () => {
      const file = path.join(dir, "faults.sqlite")
      const lite = new Database(file)
      lite.exec("create table t (id int); insert into t values (1)")
      lite.close()
      const slow = "with recursive r(n) as (select 1 union all select n + 1 from r where n < 1000000000) select count(*) from r"
      const result = await withPool({ name: "lite", db_type: "sqlite", database: file }, (pool) =>
        Effect.gen(function* () {
          const killed = yield* underFault(pool, [statement(slow)], killReaders)
          // Killed again before it answers the next statement: that statement fails, the one after runs.
          const again = yield* Effect.either(Effect.zipRight(Effect.fork(Effect.zipRight(sleep(20), killReaders)), pool.query("select id from t", { timeoutMs: 5_000, maxRows: 1 })))
          const after = yield* Effect.either(pool.query("select id from t", { timeoutMs: 5_000, maxRows: 1 }))
          return { killed, again, after }
        })
      )
      expect(result.killed.outcomes.map(failedAt)).toEqual(["query"])
      expect(result.killed.ms).toBeLessThan(PROMPT_MS)
      expect(Either.isRight(result.killed.next)).toBe(true)
      expect(Either.isRight(result.after)).toBe(true)
    })
  })

  describe("SSH tunnel", () => {
    it.skipIf(skip)("the tunnel's own TCP connection reset: statements through it fail at once, and the tunnel reconnects", async () => {
      const ssh = new SshServer()
      const sshPort = await ssh.listen()
      const r = await relayTo(sshPort)
      const tunnelled: ConnectionInput = {
        name: "tunnelled",
        db_type: "postgresql",
        host: "127.0.0.1",
        port: 5432,
        database: pgDb.name,
        username: "root",
        ssh_tunnel: { host: "127.0.0.1", port: r.port, username: "tunnel", password: TUNNEL_PASSWORD, host_key_fingerprint: ssh.fingerprint }
      }
      try {
        const result = await withPool(tunnelled, (pool) =>
          underFault(pool, [statement("select count(*) from generate_series(1, 3000000000)"), everyBatch("select g from generate_series(1, 50000000) g"), ping], reset)
        )
        expect(result.outcomes.slice(0, 2).map(failedAt)).toEqual(["tcp", "tcp"])
        expect(result.ms).toBeLessThan(PROMPT_MS)
        expect(Either.isRight(result.next)).toBe(true)
      } finally {
        await ssh.close()
      }
    })
  })
})
