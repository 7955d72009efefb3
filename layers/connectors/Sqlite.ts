import { type ChildProcess, fork } from "node:child_process"
import * as path from "node:path"
import { Effect, type Scope } from "effect"
import type { SqliteInput } from "../../src/domain/Connection"
import { attributedSql, type Connector, ConnectorError, type ConnectorPool, type OpenRequest, type QueryOptions, type QueryResult } from "./Connector"
import { fromDriverError, statementTimedOut } from "./DriverErrors"
import { PACKAGE_ROOT } from "../PackageRoot"

type SqliteConnection = typeof SqliteInput.Type

const CHILD = path.join(PACKAGE_ROOT, "layers/connectors/SqliteProcess.mjs")

interface Reply {
  readonly id?: number
  readonly ready?: boolean
  readonly ok?: boolean
  readonly code?: string
  readonly message?: string
  readonly columns?: QueryResult["columns"]
  readonly rows?: QueryResult["rows"]
  readonly truncated?: boolean
  readonly oversized?: boolean
  /** The rows' bytes as the reader counted them (Connector.ts rowBytes). */
  readonly bytes?: number
}

const stop = (child: ChildProcess) => {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
}

/** Whether the reader can take a statement: not stopped, not exited, its channel open. */
const running = (child: ChildProcess) => !child.killed && child.exitCode === null && child.signalCode === null && child.connected

const startChild = (path: string, busyTimeoutMs: number) =>
  Effect.async<ChildProcess, ConnectorError>((resume) => {
    const child = fork(CHILD, [], { stdio: ["ignore", "ignore", "ignore", "ipc"], serialization: "advanced", env: {} })
    let started = false
    const fail = (message: string) => {
      stop(child)
      resume(Effect.fail(new ConnectorError({ step: "auth", message })))
    }
    // For the process's whole life: a later error (a signal it could not get, a message after it died) is answered where it matters, by its exit.
    child.on("error", () => started || fail("The SQLite reader process could not start"))
    child.once("exit", () => started || fail("The SQLite reader process could not start"))
    child.once("message", (reply: Reply) => {
      started = true
      if (reply.ready) resume(Effect.succeed(child))
      else fail("The SQLite file does not exist or cannot be opened read-only")
    })
    child.send({ open: path, busyTimeoutMs })
    return Effect.sync(() => stop(child))
  })

const open = (request: OpenRequest<SqliteConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const path = request.connection.database
    let child = yield* startChild(path, request.connectTimeoutMs)
    yield* Effect.addFinalizer(() => Effect.sync(() => stop(child)))
    const lock = yield* Effect.makeSemaphore(1)
    let nextId = 0
    let busy = false

    // A reader that died (killed, crashed, or stopped at a timeout) is replaced by the next statement, within that statement's timeout.
    const reader = Effect.suspend(() =>
      running(child) ? Effect.void : Effect.map(startChild(path, request.connectTimeoutMs), (started) => void (child = started))
    )

    // The reader process stops at the result's cap; the rows are metered here, as they arrive.
    const ask = (sql: string, maxRows: number, meter: QueryOptions["meter"]) =>
      Effect.async<QueryResult, ConnectorError>((resume) => {
        const id = ++nextId
        const onMessage = (reply: Reply) => {
          if (reply.id !== id) return
          child.off("message", onMessage)
          child.off("exit", onExit)
          if (!reply.ok) return resume(Effect.fail(fromDriverError({ code: reply.code, message: reply.message }, request.scrub, "query")))
          // Past its cap the reader sends no rows, only its count, which tells the meter why.
          const metered = meter === undefined || meter.take(reply.bytes ?? 0)
          const oversized = reply.oversized === true || !metered
          resume(Effect.succeed(oversized ? { columns: reply.columns!, rows: [], truncated: false, oversized } : { columns: reply.columns!, rows: reply.rows!, truncated: reply.truncated! }))
        }
        const onExit = () => resume(Effect.fail(new ConnectorError({ step: "query", message: "The SQLite reader process ended unexpectedly" })))
        child.on("message", onMessage)
        child.once("exit", onExit)
        child.send({ id, sql, maxRows, maxBytes: meter?.cap }, (error) => error && onExit())
        return Effect.sync(() => {
          child.off("message", onMessage)
          child.off("exit", onExit)
        })
      })

    // The wait for the reader counts against the statement's timeout; a statement running at the timeout ends with its process.
    const query = (sql: string, options: QueryOptions) =>
      lock
        .withPermits(1)(
          Effect.zipRight(
            reader,
            Effect.suspend(() => {
              busy = true
              return ask(attributedSql(sql, options), options.maxRows, options.meter).pipe(
                // SQLite has no server to cancel on: a statement past its timeout ends with its process.
                Effect.onInterrupt(() => Effect.sync(() => stop(child))),
                Effect.ensuring(Effect.sync(() => (busy = false)))
              )
            })
          )
        )
        .pipe(Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: statementTimedOut }))

    return {
      query,
      ping: Effect.asVoid(query("select 1", { timeoutMs: request.connectTimeoutMs, maxRows: 1 })),
      stats: () => ({ total: 1, idle: busy ? 0 : 1, waiting: 0 })
    } satisfies ConnectorPool
  })

export const SqliteConnector: Connector<SqliteConnection> = {
  capabilities: {
    db_type: "sqlite",
    driver: "better-sqlite3",
    transport: "local file, read in a child process",
    read_only_guard: "opened readonly with query_only = ON; only statements that return rows",
    server_side_cancel: true,
    ssh_tunnel: false,
    tls: false,
    local_file: true,
    limit_syntax: "limit",
    verified_against: "SQLite 3.53 files"
  },
  address: () => null,
  privilegesProbe: "select count(*) as readable_tables from sqlite_master where type in ('table', 'view')",
  open
}
