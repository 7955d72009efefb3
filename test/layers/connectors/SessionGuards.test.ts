import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { DuckDBInstance } from "@duckdb/node-api"
import Database from "better-sqlite3"
import { Effect, Either } from "effect"
import mysql from "mysql2/promise"
import pgDriver from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ConnectorPool } from "../../../layers/connectors/Connector"
import { openTarget } from "../../../layers/connectors/ConnectorPools"
import { PostgresCappedRead } from "../../../layers/connectors/PostgresCappedRead"
import type { ConnectionInput } from "../../../src/domain/Connection"
import { SESSION_STRING_RULES } from "../../../layers/connectors/Mysql"
import { createTestDatabase, mysqlAvailable, postgresAvailable, TEST_MYSQL_URL, type TestDatabase } from "../../support/Servers"

const skip = !(await postgresAvailable()) || !(await mysqlAvailable())
const mysqlUrl = new URL(TEST_MYSQL_URL)

/** Opens the connector as the gateway does and runs `use` with its pool. */
const withPool = <A>(connection: ConnectionInput, use: (pool: ConnectorPool) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(openTarget({ orgId: "o", connectionId: "c", version: 1, connection, secrets: [] }), use)
    )
  )

const attempt = (pool: ConnectorPool, sql: string, timeoutMs = 5_000) => Effect.either(pool.query(sql, { timeoutMs, maxRows: 100 }))

describe("session guards and server-side cancel, per connector", () => {
  let pgDb: TestDatabase
  let dir: string
  let maria: mysql.Connection
  const mariaDb = `sluice_guard_${process.pid}`

  beforeAll(async () => {
    if (skip) return
    pgDb = await createTestDatabase()
    await pgDb.query("create table t (id int); insert into t select generate_series(1, 50)")
    maria = await mysql.createConnection({ uri: TEST_MYSQL_URL })
    await maria.query(`create database if not exists ${mariaDb}`)
    await maria.query(`create table if not exists ${mariaDb}.t (id int)`)
    await maria.query(`insert into ${mariaDb}.t values (1), (2), (3)`)
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-guards-"))
  })
  afterAll(async () => {
    await pgDb?.drop()
    await maria?.query(`drop database if exists ${mariaDb}`)
    await maria?.end()
  })

  const pg = (): ConnectionInput => ({ name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: pgDb.name, username: "root" })
  const maraidb = (): ConnectionInput => ({
    name: "maria",
    db_type: "mysql",
    host: mysqlUrl.hostname,
    port: Number(mysqlUrl.port || 3306),
    username: decodeURIComponent(mysqlUrl.username),
    database: mariaDb
  })

  it.skipIf(skip)("postgresql: writes refused by the session, one statement only, rows capped, timeout cancelled on the server", async () => {
    const outcome = await withPool(pg(), (pool) =>
      Effect.all({
        write: attempt(pool, "insert into t values (99)"),
        ddl: attempt(pool, "create table evil (id int)"),
        twoStatements: attempt(pool, "select 1; select 2"),
        capped: pool.query("select id from t order by id", { timeoutMs: 5000, maxRows: 10 }),
        exact: pool.query("select id from t order by id", { timeoutMs: 5000, maxRows: 50 }),
        slow: attempt(pool, "select pg_sleep(30)", 300),
        afterwards: pool.query("select count(*)::int from t", { timeoutMs: 5000, maxRows: 1 }),
        // A statement that turns the session's read-only default off: the session is reset before anyone reuses it.
        flip: attempt(pool, "select set_config('default_transaction_read_only', 'off', false)"),
        // Once it is back in the pool, the same session is the next one handed out (the pool reuses the latest).
        afterFlip: Effect.zipRight(Effect.sleep("300 millis"), attempt(pool, "insert into t values (98)")),
        // A session-level lock taken by a read is released with the session's reset.
        lock: attempt(pool, "select pg_advisory_lock(4242)"),
        lockFree: Effect.zipRight(
          Effect.sleep("300 millis"),
          Effect.promise(() => pgDb.query("select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = 4242"))
        )
      })
    )
    expect(Either.isRight(outcome.lock)).toBe(true)
    expect(outcome.lockFree).toEqual([{ n: 0 }])
    expect(Either.getLeft(outcome.write).pipe((e) => e._tag === "Some" && e.value.message)).toMatch(/read-only transaction/)
    expect(Either.isRight(outcome.flip)).toBe(true)
    expect(Either.getLeft(outcome.afterFlip).pipe((e) => e._tag === "Some" && e.value.message)).toMatch(/read-only transaction/)
    expect(Either.isLeft(outcome.ddl)).toBe(true)
    expect(Either.getLeft(outcome.twoStatements).pipe((e) => e._tag === "Some" && e.value.message)).toMatch(/multiple commands/)
    expect(outcome.capped.rows).toHaveLength(10)
    expect(outcome.capped.truncated).toBe(true)
    expect(outcome.exact.rows).toHaveLength(50)
    expect(outcome.exact.truncated).toBe(false)
    expect(outcome.capped.columns).toEqual([{ name: "id", type: "int4" }])
    expect(Either.getLeft(outcome.slow).pipe((e) => e._tag === "Some" && e.value.step)).toBe("timeout")
    expect(outcome.afterwards.rows).toEqual([[50]])
    const running = await pgDb.query("select count(*)::int as n from pg_stat_activity where datname = $1 and query like '%pg_sleep(30)%' and pid <> pg_backend_pid() and state = 'active'", [pgDb.name])
    expect(running[0].n).toBe(0)
    expect(await pgDb.query("select count(*)::int as n from t")).toEqual([{ n: 50 }])
  })

  it.skipIf(skip)("postgresql: the statement runs inside the session its own round trip opens, and never after a failed step", async () => {
    const session = await withPool(pg(), (pool) =>
      pool.query(
        "select current_setting('transaction_read_only'), current_setting('statement_timeout'), current_setting('standard_conforming_strings')",
        { timeoutMs: 4321, maxRows: 1 }
      )
    )
    // The statement gets what is left of its timeout after the wait for a connection.
    const [readOnly, timeout, strings] = session.rows[0] as [string, string, string]
    expect([readOnly, strings]).toEqual(["on", "on"])
    expect(Number(/^(\d+)ms$/.exec(timeout)?.[1])).toBeGreaterThan(3321)
    expect(Number(/^(\d+)ms$/.exec(timeout)?.[1])).toBeLessThanOrEqual(4321)
    // What the protocol promises the guard: after an error the server skips to the Sync, so a write behind a failed step never runs.
    const client = new pgDriver.Client({ connectionString: pgDb.url })
    await client.connect()
    try {
      const failed = await new Promise<unknown>((resolve) =>
        client.query(new PostgresCappedRead(["SET LOCAL no_such_setting = 1"], [], "insert into t values (97)", 10, pgDriver.types, (error) => resolve(error)))
      )
      expect(String(failed)).toMatch(/unrecognized configuration parameter/)
      expect((await client.query("select count(*)::int as n from t where id = 97")).rows).toEqual([{ n: 0 }])
    } finally {
      await client.end()
    }
  })

  it.skipIf(skip)("postgresql: an interrupted statement is cancelled on the server, not only abandoned", async () => {
    await withPool(pg(), (pool) => pool.query("select pg_sleep(30)", { timeoutMs: 60_000, maxRows: 1 }).pipe(Effect.timeout("500 millis"), Effect.either))
    const deadline = Date.now() + 3000
    let active = 1
    while (active > 0 && Date.now() < deadline) {
      active = (await pgDb.query("select count(*)::int as n from pg_stat_activity where datname = $1 and query like '%pg_sleep(30)%' and pid <> pg_backend_pid() and state = 'active'", [pgDb.name]))[0].n
      if (active > 0) await new Promise((r) => setTimeout(r, 100))
    }
    expect(active).toBe(0)
  })

  it.skipIf(skip)("mariadb: writes refused, one statement only, rows capped, timeout killed on the server", async () => {
    const outcome = await withPool(maraidb(), (pool) =>
      Effect.all({
        write: attempt(pool, "insert into t values (99)"),
        twoStatements: attempt(pool, "select 1; select 2"),
        capped: pool.query("select id from t order by id", { timeoutMs: 5000, maxRows: 2 }),
        slow: attempt(pool, "select sleep(30)", 300),
        interrupted: pool.query("select sleep(31)", { timeoutMs: 60_000, maxRows: 1 }).pipe(Effect.timeout("300 millis"), Effect.either)
      })
    )
    expect(Either.getLeft(outcome.write).pipe((e) => e._tag === "Some" && e.value.message)).toMatch(/READ ONLY/i)
    expect(Either.isLeft(outcome.twoStatements)).toBe(true)
    expect(outcome.capped.rows).toEqual([[1], [2]])
    expect(outcome.capped.truncated).toBe(true)
    expect(Either.isLeft(outcome.interrupted)).toBe(true)
    const deadline = Date.now() + 3000
    let sleeping: Array<unknown> = []
    do {
      const [rows] = await maria.query("select id from information_schema.processlist where db = ? and info like 'select sleep(3%'", [mariaDb])
      sleeping = rows as Array<unknown>
      if (sleeping.length > 0) await new Promise((r) => setTimeout(r, 100))
    } while (sleeping.length > 0 && Date.now() < deadline)
    expect(sleeping).toEqual([])
    const [count] = await maria.query(`select count(*) as n from ${mariaDb}.t`)
    expect((count as Array<{ n: number }>)[0]!.n).toBe(3)
  })

  it.skipIf(skip)("mariadb: every statement reads strings as the guard does, backslash escapes on and ANSI_QUOTES off, whatever the server's default", async () => {
    const raw = await mysql.createConnection({ uri: TEST_MYSQL_URL })
    try {
      // A server whose default mode is otherwise: the session the connector sets up undoes it.
      await raw.query("set session sql_mode = concat(@@sql_mode, ',NO_BACKSLASH_ESCAPES,ANSI_QUOTES')")
      await raw.query(`set session ${SESSION_STRING_RULES}`)
      const [rows] = (await raw.query("select @@sql_mode as mode, 'a\\'b' as quoted")) as unknown as [Array<{ mode: string; quoted: string }>]
      expect(rows[0]!.mode).not.toMatch(/NO_BACKSLASH_ESCAPES|ANSI_QUOTES/)
      expect(rows[0]!.quoted).toBe("a'b")
    } finally {
      await raw.end()
    }
  })

  it.skipIf(skip)("sqlite: read-only file, non-reading statements refused, a runaway statement ended with its process", async () => {
    const file = path.join(dir, "guard.sqlite")
    const db = new Database(file)
    db.exec("create table t (id integer); insert into t values (1), (2), (3)")
    db.close()
    const outcome = await withPool({ name: "lite", db_type: "sqlite", database: file }, (pool) =>
      Effect.all({
        write: attempt(pool, "insert into t values (4)"),
        attach: attempt(pool, `attach database '${path.join(dir, "other.sqlite")}' as other`),
        runaway: attempt(pool, "with recursive r(i) as (select 1 union all select i + 1 from r) select count(*) from r", 300),
        afterwards: pool.query("select count(*) as n from t", { timeoutMs: 5000, maxRows: 1 })
      })
    )
    expect(Either.isLeft(outcome.write)).toBe(true)
    expect(Either.isLeft(outcome.attach)).toBe(true)
    expect(Either.getLeft(outcome.runaway).pipe((e) => e._tag === "Some" && e.value.step)).toBe("timeout")
    expect(outcome.afterwards.rows).toEqual([[3]])
    expect(fs.existsSync(path.join(dir, "other.sqlite"))).toBe(false)
  })

  it.skipIf(skip)("duckdb: read-only, no file or network access, configuration locked", async () => {
    const file = path.join(dir, "guard.duckdb")
    const instance = await DuckDBInstance.create(file)
    const c = await instance.connect()
    await c.run("create table t as select * from range(10) r(id)")
    c.closeSync()
    instance.closeSync()
    fs.writeFileSync(path.join(dir, "secret.csv"), "a\n1\n")
    const outcome = await withPool({ name: "duck", db_type: "duckdb", database: file }, (pool) =>
      Effect.all({
        write: attempt(pool, "insert into t values (99)"),
        readFile: attempt(pool, `select * from read_csv('${path.join(dir, "secret.csv")}')`),
        unlock: attempt(pool, "set enable_external_access = true"),
        capped: pool.query("select id from t order by id", { timeoutMs: 5000, maxRows: 4 })
      })
    )
    expect(Either.isLeft(outcome.write)).toBe(true)
    expect(Either.isLeft(outcome.readFile)).toBe(true)
    expect(Either.isLeft(outcome.unlock)).toBe(true)
    expect(outcome.capped.rows).toHaveLength(4)
    expect(outcome.capped.truncated).toBe(true)
  })
})
