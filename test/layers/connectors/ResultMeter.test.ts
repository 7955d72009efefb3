import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { DuckDBInstance } from "@duckdb/node-api"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ByteMeter, ConnectorPool, QueryResult } from "../../../layers/connectors/Connector"
import type { ConnectionInput } from "../../../src/domain/Connection"
import { type ClickhouseFake, startClickhouseFake } from "../../fakes/ClickhouseFake"
import { startTrinoFake, type TrinoFake } from "../../fakes/TrinoFake"
import { withPool } from "../../support/Connectors"
import { createTestDatabase, mysqlAvailable, mysqlConnection, postgresAvailable, type TestDatabase } from "../../support/Servers"

const skip = !(await postgresAvailable()) || !(await mysqlAvailable())

/** A meter that refuses once `cap` bytes have been counted, and remembers how many it was offered. */
const meterOf = (cap: number) => {
  let offered = 0
  const meter: ByteMeter = { cap, take: (bytes) => (offered += bytes) <= cap }
  return { meter, offered: () => offered }
}

const CAP = 20_000

/** Runs a wide statement with a small meter: the read must stop soon after the cap, with no rows kept. */
const metered = async (connection: ConnectionInput, sql: string) => {
  const { meter, offered } = meterOf(CAP)
  const result = await withPool(connection, (pool: ConnectorPool) => pool.query(sql, { timeoutMs: 20_000, maxRows: 100_000, meter }))
  return { result, offered: offered() }
}

const expectStopped = ({ result, offered }: { result: QueryResult; offered: number }, slack: number) => {
  expect(result.oversized).toBe(true)
  expect(result.rows).toEqual([])
  expect(offered).toBeGreaterThan(CAP)
  // Read at most a batch past the cap (what the driver had already parsed), far from the whole result.
  expect(offered).toBeLessThan(CAP + slack)
}

describe("every buffered read is metered while it is read, and stops once the meter refuses (issue 17 item 2)", () => {
  let dir: string
  let database: TestDatabase
  let trino: TrinoFake
  let clickhouse: ClickhouseFake

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-meter-"))
    trino = await startTrinoFake({ pageSize: 100 })
    clickhouse = await startClickhouseFake({ users: { alice: "pw" }, databases: ["default"] })
    if (skip) return
    database = await createTestDatabase()
  })
  afterAll(async () => {
    await trino?.close()
    await clickhouse?.close()
    await database?.drop()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it.skipIf(skip)("PostgreSQL: a meter that stops counting once its read has answered leaves the session whole for the next statement", async () => {
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" } as ConnectionInput
    // As a caller whose share of the result memory is given back the moment its read answers: any count after that is refused.
    let answered = false
    const meter: ByteMeter = { cap: CAP, take: () => !answered }
    const sessions = await withPool(connection, (pool) =>
      Effect.gen(function* () {
        const pids: Array<unknown> = []
        for (let i = 0; i < 3; i++) {
          answered = false
          const result = yield* Effect.async<QueryResult, unknown>((resume) => {
            pool.queryNow!("select pg_backend_pid() as pid", { timeoutMs: 5_000, maxRows: 10, meter }, (exit) => {
              answered = true
              resume(exit)
            })
          })
          expect(result.oversized).toBeUndefined()
          pids.push(result.rows[0]![0])
        }
        return pids
      })
    )
    // One session served all three: the meter's own listener did not close it after the read had answered.
    expect(new Set(sessions).size).toBe(1)
  })

  it.skipIf(skip)("PostgreSQL: a caller that gives up while an oversized read is being cancelled is not told, and its client is not stopped a second time", async () => {
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" } as ConnectionInput
    const uncaught: Array<unknown> = []
    const record = (error: unknown) => void uncaught.push(error)
    process.on("uncaughtException", record)
    try {
      const after = await withPool(connection, (pool) =>
        Effect.gen(function* () {
          let giveUp = () => {}
          // Refuses the first row, and gives the statement up on the next turn: while the oversized read's cancel is under way.
          const meter: ByteMeter = {
            cap: 1,
            take: () => {
              setImmediate(() => giveUp())
              return false
            }
          }
          const told = yield* Effect.async<string>((resume) => {
            giveUp = pool.queryNow!("select repeat('x', 200) from generate_series(1, 5000)", { timeoutMs: 5_000, maxRows: 10_000, meter }, (exit) =>
              resume(Effect.succeed(exit._tag === "Success" && exit.value.oversized === true ? "oversized" : "other"))
            )
          }).pipe(Effect.timeoutTo({ duration: "1 second", onSuccess: (told) => `told: ${told}`, onTimeout: () => "not told" }))
          expect(told).toBe("not told")
          return yield* pool.query("select 1 as one", { timeoutMs: 5_000, maxRows: 10 })
        })
      )
      expect({ rows: after.rows, uncaught: uncaught.map(String) }).toEqual({ rows: [[1]], uncaught: [] })
    } finally {
      process.off("uncaughtException", record)
    }
  })

  it.skipIf(skip)("PostgreSQL counts each row from its message header and closes the socket", async () => {
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" } as ConnectionInput
    expectStopped(await metered(connection, "select g, repeat('x', 1000) as v from generate_series(1, 1000000) g"), 70_000)
  })

  it.skipIf(skip)("MariaDB counts each row event and pauses the connection", async () => {
    expectStopped(await metered(mysqlConnection("maria") as ConnectionInput, "select seq, repeat('x', 1000) as v from seq_1_to_1000000"), 5_000)
  })

  it("DuckDB counts the rows of each chunk", async () => {
    const file = path.join(dir, "meter.duckdb")
    const instance = await DuckDBInstance.create(file)
    instance.closeSync()
    expectStopped(await metered({ name: "duck", db_type: "duckdb", database: file } as ConnectionInput, "select i, repeat('x', 1000) as v from range(1000000) t(i)"), 5_000)
  })

  it("SQLite stops in its reader process at the cap the meter gives it", async () => {
    const file = path.join(dir, "meter.sqlite")
    new Database(file).close()
    const sql = "with recursive r(n) as (select 1 union all select n + 1 from r where n < 1000000) select n, printf('%.1000c', 'x') from r"
    expectStopped(await metered({ name: "lite", db_type: "sqlite", database: file } as ConnectionInput, sql), 2_000)
  })

  it("Trino counts each page's rows and cancels the statement", async () => {
    const connection = { name: "tr", db_type: "trino", host: "127.0.0.1", port: trino.port, username: "carol", catalog: "hive" } as ConnectionInput
    const outcome = await metered(connection, "SELECT n FROM UNNEST(sequence(1, 1000000)) AS t(n)")
    expectStopped(outcome, 1_000)
    const sent = trino.statements.find((s) => s.sql.includes("sequence(1, 1000000)"))!
    expect(trino.cancelled).toContain(sent.id)
  })

  it("ClickHouse counts each row and closes the response", async () => {
    const connection = { name: "ch", db_type: "clickhouse", host: "127.0.0.1", port: clickhouse.port, username: "alice", password: "pw", database: "default" } as ConnectionInput
    expectStopped(await metered(connection, "SELECT number FROM numbers(10000000)"), 1_000)
    const [sent] = clickhouse.queries.filter((q) => q.query.includes("numbers(10000000)"))
    const deadline = Date.now() + 3_000
    while (!clickhouse.abandoned.has(sent!.queryId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
    expect(clickhouse.abandoned.get(sent!.queryId)).toBeLessThan(10_000_000)
  })
})
