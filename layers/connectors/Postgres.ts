import * as net from "node:net"
import type { LookupFunction } from "node:net"
import * as path from "node:path"
import { Effect, Exit, type Scope } from "effect"
import pg from "pg"
import Cursor from "pg-cursor"
import type { PostgresqlInput, RedshiftInput } from "../../src/domain/Connection"
import {
  attributedSql,
  type ConnectorError,
  DEADLINE_GRACE_MS,
  type Connector,
  type ConnectorPool,
  type Endpoint,
  type OpenRequest,
  type QueryOptions,
  type QueryResult,
  type Row,
  type RowBatches,
  STREAM_BATCH_ROWS,
  takeFromPool
} from "./Connector"
import { fromDriverError, reusableAfter, sessionReusable, statementTimedOut } from "./DriverErrors"
import { dialPinned, pinnedSocket } from "./EgressPolicy"
import { PostgresCappedRead } from "./PostgresCappedRead"
import { tlsOptions } from "./Tls"

type PgConnection = typeof PostgresqlInput.Type | typeof RedshiftInput.Type

const address = (c: PgConnection): Endpoint => ({ host: c.host, port: c.port ?? (c.db_type === "redshift" ? 5439 : 5432) })

// Sized by cores, not by callers: 4 connections beat 32 on two cores (DESIGN.md §7).
const POOL_SIZE = 4
const IDLE_MS = 60_000
// How long past its timeout a client may wait for its statement to end and its session to reset before it is discarded instead.
const RESET_GRACE_MS = 5_000
const CANCEL_REQUEST_CODE = 80877102

const ignoreError = () => undefined

/** The wire protocol's CancelRequest on a connection of its own, which the server answers by closing it. */
const cancelRequest = (endpoint: Endpoint, lookup: LookupFunction | undefined, pid: number, secretKey: number, timeoutMs: number) =>
  Effect.async<void>((resume) => {
    const packet = Buffer.alloc(16)
    packet.writeInt32BE(16, 0)
    packet.writeInt32BE(CANCEL_REQUEST_CODE, 4)
    packet.writeInt32BE(pid, 8)
    packet.writeInt32BE(secretKey, 12)
    // A host that is a directory is the server's unix socket directory, as libpq reads it.
    const socket = endpoint.host.startsWith("/")
      ? net.connect(path.join(endpoint.host, `.s.PGSQL.${endpoint.port}`))
      : dialPinned(endpoint, lookup)
    socket.once("connect", () => socket.end(packet))
    socket.setTimeout(timeoutMs, () => socket.destroy())
    socket.on("error", ignoreError)
    socket.once("close", () => resume(Effect.void))
    return Effect.sync(() => socket.destroy())
  })

// Type names for the OIDs a result most often carries; others are reported by number.
const TYPE_NAMES = new Map(Object.entries(pg.types.builtins).map(([name, oid]) => [oid as number, name.toLowerCase()]))

// Keep 64-bit integers and numerics exact as strings; dates stay as the server wrote them.
const parsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 1082 || oid === 1114 || oid === 1184 ? (value: string) => value : pg.types.getTypeParser(oid, format as "text")) as pg.CustomTypesConfig["getTypeParser"]
}

// DISCARD ALL cannot follow ROLLBACK in one transaction; PostgreSQL documents it as these statements, which can, so the reset is one round trip.
const RESET_STEPS = [
  "ROLLBACK",
  "CLOSE ALL",
  "SET SESSION AUTHORIZATION DEFAULT",
  "RESET ALL",
  "DEALLOCATE ALL",
  "UNLISTEN *",
  "SELECT pg_advisory_unlock_all()",
  "DISCARD PLANS",
  "DISCARD TEMP",
  "DISCARD SEQUENCES"
]
const RESET_SESSION = RESET_STEPS.join("; ")

const dialingClient = (connectTimeoutMs: number) =>
  class extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectTimeoutMs })
    }
  }

const openPool = (request: OpenRequest<PgConnection>): Effect.Effect<ConnectorPool, never, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const endpoint = request.endpoint ?? address(c)
    const tls = tlsOptions(c.tls, c.host)
    const pool = yield* Effect.acquireRelease(
      Effect.sync(
        () =>
          new pg.Pool({
            host: endpoint.host,
            port: endpoint.port,
            database: c.database,
            user: c.username,
            ...(c.password !== undefined ? { password: c.password } : {}),
            ssl: tls ?? false,
            max: POOL_SIZE,
            idleTimeoutMillis: IDLE_MS,
            // The connect timeout bounds each dial; pg-pool would also apply it to a wait for a busy pool, which
            // the request's own deadline bounds instead (a busy pool is not an unreachable database).
            Client: dialingClient(request.connectTimeoutMs),
            application_name: "sluice",
            types: parsers,
            // The socket dials the addresses the egress policy checks as it opens; the name stays the TLS server name.
            stream: () => pinnedSocket(request.lookup)
          })
      ),
      (pool) => Effect.promise(() => pool.end())
    )
    // A client's socket can fail at any stage of its life (idle, leased, mid-statement, in its reset, in a ping): its
    // pending queries get the error, and the client also emits it, which without a listener would end the process.
    pool.on("error", ignoreError)
    pool.on("connect", (client) => client.on("error", ignoreError))

    const take = Effect.interruptible(
      takeFromPool(
        () => pool.connect(),
        (client) => client.release(),
        (error) => fromDriverError(error, request.scrub, "connect")
      )
    )

    /**
     * Back to the pool after the session reset, which the client queues behind a statement still
     * running (a cancelled one ends first); a client whose reset has not finished after `boundMs`, or
     * failed, is discarded. A broken client is discarded at once.
     */
    const recycle = (client: pg.PoolClient, broken: boolean, boundMs: number) => {
      if (broken) return client.release(true)
      let released = false
      const release = (error?: Error | true) => {
        if (released) return
        released = true
        clearTimeout(bound)
        client.release(error)
      }
      const bound = setTimeout(() => release(true), boundMs)
      const reset = c.db_type === "postgresql" ? client.query(RESET_SESSION) : client.query("ROLLBACK").then(() => client.query("DISCARD ALL"))
      reset.then(
        () => release(),
        (error: Error) => release(error)
      )
    }

    /** Cancels a backend's statement over the protocol's CancelRequest: it needs no session, so no pool slot and no extra backend. */
    const cancel = (client: pg.PoolClient) => {
      const key = client as unknown as { processID: number; secretKey: number }
      return cancelRequest(endpoint, request.lookup, key.processID, key.secretKey, request.connectTimeoutMs)
    }

    /**
     * Cancels a client's statement until the client has nothing running (the statement, and a
     * cursor's close behind it, have ended), then discards the client; its backend ends only then, as
     * a backend whose socket closes under a statement runs it on to its timeout. The server drops a
     * CancelRequest that reaches the backend while it waits for its next message, and the preamble
     * and the statement are several messages, so a single cancel sent as a statement starts can be
     * lost. The session is not reused: given up on mid-protocol (a cursor closed under a cancel), it
     * can still owe answers, and the next statement on it would read them as its own.
     */
    const stopStatement = (client: pg.PoolClient, boundMs: number) => {
      const events = ["drain", "end", "error"] as const
      let ended = (client as unknown as { readyForQuery: boolean }).readyForQuery
      const over = new Promise<void>((resolve) => {
        if (ended) return resolve()
        const done = () => {
          ended = true
          for (const event of events) client.off(event, done)
          resolve()
        }
        for (const event of events) client.on(event, done)
      })
      const deadline = Date.now() + boundMs
      const loop = (pause: number): Effect.Effect<void> =>
        Effect.flatMap(cancel(client), () =>
          ended || Date.now() >= deadline
            ? Effect.void
            : Effect.flatMap(Effect.race(Effect.promise(() => over), Effect.sleep(pause)), () => (ended ? Effect.void : loop(Math.min(pause * 2, 1_000))))
        )
      Effect.runFork(loop(25).pipe(Effect.ensuring(Effect.sync(() => client.release(true)))))
    }

    // The SQL guard reads '…' without backslash escapes on PostgreSQL; Redshift keeps its own rule.
    const pinStrings = c.db_type === "postgresql" ? ["SET LOCAL standard_conforming_strings = on"] : []
    // Unqualified names resolve where the table policy and PII rules expect them, whatever the role's own search_path.
    const pinSearchPath = `SET LOCAL search_path = "${(c.schema_name ?? "public").replaceAll('"', '""')}"`

    // Redshift's reset is ROLLBACK then DISCARD ALL, two round trips: it runs when the client is released.
    const epilogue = c.db_type === "postgresql" ? RESET_STEPS : []

    /** The statements that open a query's session: a READ ONLY transaction with the statement's limits. */
    const preambleOf = (options: QueryOptions) => {
      const timeout = Math.max(1, Math.floor(options.timeoutMs))
      return [
        "BEGIN READ ONLY",
        `SET LOCAL statement_timeout = ${timeout}`,
        `SET LOCAL idle_in_transaction_session_timeout = ${timeout + 5000}`,
        pinSearchPath,
        ...pinStrings
      ]
    }

    /**
     * A pooled client for one statement, waited for within the statement's timeout (the options it
     * returns give the statement what is left of it), reset when released; `guarded` runs a step on
     * it. An interrupted step is cancelled on the server and the client closed once the statement has
     * ended (stopStatement), so the pool never holds more backends than its size.
     */
    const lease = (options: QueryOptions) =>
      Effect.gen(function* () {
        const started = Date.now()
        const bound = options.timeoutMs + RESET_GRACE_MS
        const state = { broken: false, stopping: false }
        const client = yield* Effect.acquireRelease(
          Effect.interruptible(take.pipe(Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: statementTimedOut }))),
          // An interrupted step's client is discarded by stopStatement once its statement has ended.
          (client) => Effect.sync(() => state.stopping || recycle(client, state.broken, bound))
        )
        const guarded = <A>(step: () => Promise<A>) =>
          Effect.tryPromise({ try: step, catch: (error) => fromDriverError(error, request.scrub, "query") }).pipe(
            Effect.onExit((exit) => Effect.sync(() => (state.broken ||= !Exit.isInterrupted(exit) && !sessionReusable(exit)))),
            Effect.onInterrupt(() =>
              Effect.sync(() => {
                if (!state.stopping) stopStatement(client, bound)
                state.stopping = true
              })
            ),
            // A session lost under its statement (a network reset) leaves the statement running on the server until its timeout; the answer does not wait for the cancel.
            Effect.tapError((error) => (error.step === "tcp" ? Effect.forkDaemon(cancel(client)) : Effect.void))
          )
        const remaining = { ...options, timeoutMs: Math.max(1, options.timeoutMs - (Date.now() - started)) }
        return { client, guarded, state, options: remaining }
      })

    const columnsOf = (fields: ReadonlyArray<pg.FieldDef>) =>
      fields.map((f) => ({ name: f.name, type: TYPE_NAMES.get(f.dataTypeID) ?? String(f.dataTypeID) }))

    /**
     * One statement, as plain callbacks (the per-query path runs no fibers of its own): a pooled
     * client waited for within the timeout, the preamble and the statement in one round trip, the
     * client reset when released; `done` is told once. The function it returns gives the statement
     * up: it is cancelled on the server and its client closed once it has ended (stopStatement); a
     * client that arrives after the wait gave up goes straight back. It answers by its deadline even
     * when the database does not.
     */
    const queryNow = (sql: string, options: QueryOptions, done: (exit: Exit.Exit<QueryResult, ConnectorError>) => void) => {
      const started = Date.now()
      const bound = options.timeoutMs + RESET_GRACE_MS
      let leased: pg.PoolClient | undefined
      let settled = false
      let gaveUp = false
      // The outcome is decided (from here, giving up does nothing): false where it was already.
      const claim = () => {
        if (settled) return false
        settled = true
        clearTimeout(backstop)
        return true
      }
      const tell = (outcome: Exit.Exit<QueryResult, ConnectorError>) => {
        // Called from the driver's socket callbacks: a caller that throws must not take the process with it.
        try {
          done(outcome)
        } catch (error) {
          Effect.runFork(Effect.logError("a statement's caller failed as it was told how the statement ended", error))
        }
      }
      const settle = (outcome: Exit.Exit<QueryResult, ConnectorError>) => {
        if (claim()) tell(outcome)
      }
      // Given up on (timed out or interrupted): the statement is cancelled in the background, and its session closed once it has ended.
      const abandon = (client: pg.PoolClient) => stopStatement(client, bound)
      const waiting = setTimeout(() => settle(Exit.fail(statementTimedOut())), options.timeoutMs)
      // statement_timeout ends the statement on a server that answers; this ends the call on one that does not.
      const backstop = setTimeout(() => {
        if (settled) return
        settle(Exit.fail(statementTimedOut()))
        if (leased !== undefined) abandon(leased)
      }, options.timeoutMs + DEADLINE_GRACE_MS)
      const read = (client: pg.PoolClient) => (error: unknown, result: PostgresCappedRead) => {
        if (settled) return
        if (error) {
          const failure = fromDriverError(error, request.scrub, "query")
          recycle(client, !reusableAfter(failure), bound)
          // A session lost under its statement (a network reset) leaves the statement running on the server until its timeout; the answer does not wait for the cancel.
          if (failure.step === "tcp") Effect.runFork(cancel(client))
          return settle(Exit.fail(failure))
        }
        const columns = columnsOf(result.fields)
        if (result.oversized) {
          // Claimed before the cancel: a caller giving up meanwhile must not stop (and release) the client a second time, nor be told.
          if (!claim()) return
          const left = Math.max(1, started + options.timeoutMs + DEADLINE_GRACE_MS - Date.now())
          return Effect.runCallback(Effect.timeoutOption(cancel(client), left), {
            onExit: () => {
              recycle(client, true, bound)
              if (!gaveUp) tell(Exit.succeed({ columns, rows: [], truncated: false, oversized: true }))
            }
          })
        }
        // A statement that succeeded was followed by the reset in its own round trip.
        if (result.epilogueDone) client.release()
        else recycle(client, false, bound)
        settle(
          Exit.succeed({
            columns,
            rows: result.rows.length > options.maxRows ? result.rows.slice(0, options.maxRows) : result.rows,
            truncated: result.more || result.rows.length > options.maxRows
          })
        )
      }
      pool.connect().then(
        (client) => {
          clearTimeout(waiting)
          if (settled) return client.release()
          leased = client
          const timed = { ...options, timeoutMs: Math.max(1, options.timeoutMs - (Date.now() - started)) }
          client.query(new PostgresCappedRead(preambleOf(timed), epilogue, attributedSql(sql, options), options.maxRows + 1, parsers, read(client), options.meter))
        },
        (error: unknown) => {
          clearTimeout(waiting)
          settle(Exit.fail(fromDriverError(error, request.scrub, "connect")))
        }
      )
      return () => {
        gaveUp = true
        clearTimeout(waiting)
        clearTimeout(backstop)
        if (settled) return
        settled = true
        if (leased !== undefined) abandon(leased)
      }
    }

    const query = (sql: string, options: QueryOptions) =>
      Effect.async<QueryResult, ConnectorError>((resume) => {
        const giveUp = queryNow(sql, options, resume)
        return Effect.sync(giveUp)
      })

    /** The statement through a server cursor, read `STREAM_BATCH_ROWS` at a time, at most maxRows + 1 rows in all. */
    const stream = (sql: string, options: QueryOptions) =>
      Effect.gen(function* () {
        const { client, guarded, state, options: timed } = yield* lease(options)
        yield* guarded(() => client.query(preambleOf(timed).join("; ")))
        // A cursor that has read its last row, or whose read failed (pg-cursor syncs on error), has no portal left to close.
        let cursorOpen = true
        const cursor = yield* Effect.acquireRelease(
          Effect.sync(() => client.query(new Cursor(attributedSql(sql, options), [], { rowMode: "array", types: parsers }))),
          // A read cancelled under the close can leave it waiting for an answer already given: then the client is discarded.
          (cursor) =>
            cursorOpen
              ? Effect.interruptible(Effect.promise(() => cursor.close().catch(() => undefined))).pipe(
                  Effect.timeoutFail({ duration: RESET_GRACE_MS, onTimeout: () => "stuck" as const }),
                  Effect.catchAll(() => Effect.sync(() => (state.broken = true)))
                )
              : Effect.void
        )
        let left = options.maxRows + 1
        const read = Effect.suspend(() => {
          const wanted = Math.min(STREAM_BATCH_ROWS, left)
          return guarded(() => cursor.read(wanted)).pipe(
            Effect.tapBoth({
              onFailure: () => Effect.sync(() => (cursorOpen = false)),
              onSuccess: (rows) =>
                Effect.sync(() => {
                  left -= rows.length
                  if (rows.length < wanted) cursorOpen = false
                })
            })
          )
        })
        let pending: ReadonlyArray<Row> | undefined = yield* read
        const fields = (cursor as unknown as { _result?: { fields?: Array<pg.FieldDef> } })._result?.fields ?? []
        return {
          columns: columnsOf(fields),
          next: Effect.suspend(() => {
            const rows = pending
            pending = undefined
            return rows !== undefined ? Effect.succeed(rows) : left > 0 ? read : Effect.succeed([])
          })
        } satisfies RowBatches
      })

    const ping = Effect.acquireUseRelease(
      take,
      (client) =>
        Effect.tryPromise({ try: () => client.query("select 1"), catch: (e) => fromDriverError(e, request.scrub, "connect") }),
      (client) => Effect.sync(() => client.release())
    ).pipe(Effect.asVoid)

    return {
      query,
      queryNow,
      answersByDeadline: true,
      stream,
      ping,
      stats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount })
    } satisfies ConnectorPool
  })

const capabilities = (dbType: "postgresql" | "redshift") => ({
  db_type: dbType,
  driver: "pg",
  transport: "PostgreSQL wire protocol",
  read_only_guard:
    "BEGIN READ ONLY + SET LOCAL statement_timeout in the statement's own round trip (extended protocol: one statement, rows read up to the cap, nothing runs after a failed step), the session reset (DISCARD ALL) before reuse",
  server_side_cancel: true,
  ssh_tunnel: true,
  tls: true,
  local_file: false,
  limit_syntax: "limit" as const,
  verified_against: dbType === "postgresql" ? "PostgreSQL 15" : "PostgreSQL 15 (Redshift speaks its wire protocol)"
})

const PRIVILEGES_PROBE = `select count(*)::int as readable_tables from information_schema.tables
  where table_schema not in ('pg_catalog', 'information_schema')`

/** A session of its own on a PostgreSQL server (not a pooled, read-only one): for branch administration and the dbt proxy's upstream. */
export interface PostgresSession {
  readonly client: pg.Client
  /** The ParameterStatus values the server sent at startup. */
  readonly parameters: ReadonlyMap<string, string>
  /** Asks the server (over a connection of its own) to cancel the session's running statement. */
  readonly cancel: Effect.Effect<void>
  /** The session's socket, for a caller that speaks the protocol on it from here on (the driver lets go of it; the scope still closes it). */
  readonly takeSocket: () => net.Socket
}

/** Who a session logs in as, and to which database: the connection's own role unless `user` is given. */
export interface SessionLogin {
  readonly database: string
  readonly user?: string
  readonly password?: string
  /** Settings the session starts with (they are also what RESET ALL returns to). */
  readonly settings?: Readonly<Record<string, string>>
}

/** Opens a session as `login` (TLS, egress and the connect timeout as the connection's pools have them); ended with its scope. */
export const openPostgresSession = (request: OpenRequest<typeof PostgresqlInput.Type>, login: SessionLogin): Effect.Effect<PostgresSession, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const endpoint = request.endpoint ?? address(c)
    const tls = tlsOptions(c.tls, c.host)
    const password = login.user === undefined ? c.password : login.password
    const parameters = new Map<string, string>()
    const client = new pg.Client({
      host: endpoint.host,
      port: endpoint.port,
      database: login.database,
      user: login.user ?? c.username,
      ...(password !== undefined ? { password } : {}),
      ...(login.settings === undefined ? {} : { options: Object.entries(login.settings).map(([name, value]) => `-c ${name}=${value}`).join(" ") }),
      ssl: tls ?? false,
      connectionTimeoutMillis: request.connectTimeoutMs,
      application_name: "sluice",
      types: parsers,
      stream: () => pinnedSocket(request.lookup)
    })
    client.on("error", ignoreError)
    const connection = (client as unknown as { connection: { on: (event: string, listener: (message: { parameterName: string; parameterValue: string }) => void) => void } }).connection
    connection.on("parameterStatus", (message) => parameters.set(message.parameterName, message.parameterValue))
    let taken: net.Socket | undefined
    yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => client.connect(), catch: (error) => fromDriverError(error, request.scrub, "connect") }),
      () => (taken === undefined ? Effect.promise(() => client.end().catch(ignoreError)) : Effect.sync(() => void taken!.destroy()))
    )
    const key = client as unknown as { processID: number; secretKey: number; connection: { stream: net.Socket } }
    const takeSocket = () => {
      if (taken !== undefined) return taken
      taken = key.connection.stream
      for (const event of ["data", "end", "close", "error"]) taken.removeAllListeners(event)
      taken.on("error", () => taken!.destroy())
      return taken
    }
    return { client, parameters, cancel: cancelRequest(endpoint, request.lookup, key.processID, key.secretKey, request.connectTimeoutMs), takeSocket }
  })

export const PostgresConnector: Connector<typeof PostgresqlInput.Type> = {
  capabilities: capabilities("postgresql"),
  address,
  privilegesProbe: PRIVILEGES_PROBE,
  holdsServerSessions: true,
  open: openPool
}

export const RedshiftConnector: Connector<typeof RedshiftInput.Type> = {
  capabilities: capabilities("redshift"),
  address,
  privilegesProbe: PRIVILEGES_PROBE,
  holdsServerSessions: true,
  open: openPool
}
