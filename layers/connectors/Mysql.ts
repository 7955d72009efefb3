import type { Readable } from "node:stream"
import { Effect, type Exit, type Scope } from "effect"
import mysql from "mysql2/promise"
import type { MysqlInput } from "../../src/domain/Connection"
import {
  attributedSql,
  type Connector,
  type ConnectorError,
  type ConnectorPool,
  type Endpoint,
  type OpenRequest,
  type QueryOptions,
  type QueryResult,
  type Row,
  RowCollector,
  type RowBatches,
  STREAM_BATCH_ROWS,
  takeFromPool
} from "./Connector"
import { fromDriverError, sessionReusable, statementTimedOut } from "./DriverErrors"
import { dialPinned } from "./EgressPolicy"
import { tlsOptions } from "./Tls"

/** How every statement reads strings, as the SQL guard reads them: backslash escapes on, "…" a string (not ANSI_QUOTES), whatever the server's default. */
export const SESSION_STRING_RULES = "sql_mode = REPLACE(REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', ''), 'ANSI_QUOTES', '')"

type MysqlConnection = typeof MysqlInput.Type

const address = (c: MysqlConnection): Endpoint => ({ host: c.host, port: c.port ?? 3306 })

const POOL_SIZE = 4
const IDLE_MS = 60_000
// How long a connection waiting for its statement to end (after a kill, or for its reset) may stay out of the pool before it is closed instead.
const STATEMENT_GRACE_MS = 5_000

// mysql2 column type numbers, named as MySQL documents them.
const TYPE_NAMES = new Map(Object.entries(mysql.Types).map(([name, id]) => [id as number, name.toLowerCase()]))

// The mysql2 connection under a pooled one: its event API reads rows one at a time instead of buffering the result.
interface CoreQuery {
  on(event: "fields", listener: (fields: ReadonlyArray<mysql.FieldPacket>) => void): CoreQuery
  on(event: "result", listener: (row: Row) => void): CoreQuery
  on(event: "error", listener: (error: unknown) => void): CoreQuery
  on(event: "end", listener: () => void): CoreQuery
  stream(options: object): Readable
}
interface CoreConnection {
  query(options: object): CoreQuery
  pause(): void
  stream?: { destroy: () => void }
  on(event: "error", listener: (error: unknown) => void): void
  off(event: "error", listener: (error: unknown) => void): void
}
const core = (conn: mysql.PoolConnection) => (conn as unknown as { connection: CoreConnection }).connection

const ignoreError = () => undefined

/**
 * A promise read through the driver's events, which also fails when the connection does: a statement
 * read that way has no callback, so a reset or a killed session reaches only the connection.
 */
const failingWithConnection = <A>(conn: mysql.PoolConnection, read: (resolve: (value: A) => void, reject: (error: unknown) => void) => void) => {
  const connection = core(conn)
  let lost: (error: unknown) => void = ignoreError
  return new Promise<A>((resolve, reject) => {
    lost = reject
    connection.on("error", lost)
    read(resolve, reject)
  }).finally(() => connection.off("error", lost))
}

/** What a leased connection is doing: whether it was interrupted, and whether its session can still be reused. */
interface LeaseState {
  interrupted: boolean
  discard: boolean
}

const open = (request: OpenRequest<MysqlConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const endpoint = request.endpoint ?? address(c)
    const tls = tlsOptions(c.tls, c.host)
    const session = {
      host: endpoint.host,
      port: endpoint.port,
      user: c.username,
      ...(c.password !== undefined ? { password: c.password } : {}),
      ...(c.database !== undefined ? { database: c.database } : {}),
      ...(tls !== null ? { ssl: tls as mysql.SslOptions } : {}),
      connectTimeout: request.connectTimeoutMs,
      // Never more than one statement per call: the driver itself refuses "a; b".
      multipleStatements: false,
      supportBigNumbers: true,
      bigNumberStrings: true,
      dateStrings: true,
      rowsAsArray: true,
      // Every connection (the pool's and the one that kills a statement) dials the addresses the egress policy checks as it opens.
      stream: () => dialPinned(endpoint, request.lookup).setNoDelay(true).setKeepAlive(true)
    }
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => mysql.createPool({ ...session, connectionLimit: POOL_SIZE, maxIdle: POOL_SIZE, idleTimeout: IDLE_MS })),
      // A connection still running a statement delays end() until the statement is over; shutdown does not wait for that.
      (pool) => Effect.promise(() => pool.end().catch(() => undefined)).pipe(Effect.timeout(request.connectTimeoutMs), Effect.ignore)
    )

    // A pooled connection emits each socket failure (idle, mid-statement, in its reset), and the pool's own listener
    // hears only the first: a later one, or one on a connection between uses, would end the process.
    pool.on("connection", (connection) => (connection as unknown as CoreConnection).on("error", ignoreError))

    const take = Effect.interruptible(
      takeFromPool(
        () => pool.getConnection(),
        (conn) => conn.release(),
        (error) => fromDriverError(error, request.scrub, "connect")
      )
    )

    // MariaDB names the per-statement limit max_statement_time (seconds); MySQL, max_execution_time (ms).
    const flavour = yield* Effect.acquireUseRelease(
      take,
      (conn) => Effect.tryPromise({ try: () => conn.query("select version()"), catch: (e) => fromDriverError(e, request.scrub, "connect") }),
      (conn) => Effect.sync(() => conn.release())
    ).pipe(Effect.map(([rows]) => (String((rows as Array<Array<unknown>>)[0]?.[0]).includes("MariaDB") ? "mariadb" : "mysql")))

    // The SQL guard reads backslashes in strings as escapes and "…" as a string, so the session must too.
    const guards = (options: QueryOptions) =>
      flavour === "mariadb"
        ? `SET SESSION max_statement_time = ${(options.timeoutMs / 1000).toFixed(3)}, sql_select_limit = ${options.maxRows + 1}, ${SESSION_STRING_RULES}`
        : `SET SESSION max_execution_time = ${Math.ceil(options.timeoutMs)}, sql_select_limit = ${options.maxRows + 1}, ${SESSION_STRING_RULES}`

    const columnsOf = (fields: ReadonlyArray<mysql.FieldPacket>) =>
      fields.map((f) => ({ name: f.name, type: TYPE_NAMES.get(f.type ?? -1) ?? String(f.type) }))

    /** The statement's rows one at a time, stopping (connection paused, left to be discarded) once the meter refuses one. */
    const read = (conn: mysql.PoolConnection, sql: string, options: QueryOptions) =>
      failingWithConnection<QueryResult>(conn, (resolve, reject) => {
        const rows = new RowCollector(options)
        let fields: ReadonlyArray<mysql.FieldPacket> = []
        const connection = core(conn)
        connection
          .query({ sql: attributedSql(sql, options), rowsAsArray: true })
          .on("fields", (f) => (fields = f))
          .on("result", (row) => {
            if (rows.oversized) return
            rows.add(row)
            // sql_select_limit ends the statement after the row cap; only the meter stops it early.
            if (!rows.oversized) return
            connection.pause()
            resolve(rows.result(columnsOf(fields)))
          })
          .on("error", reject)
          .on("end", () => resolve(rows.result(columnsOf(fields))))
      })

    const run = (conn: mysql.PoolConnection, sql: string, options: QueryOptions, state: LeaseState) =>
      Effect.tryPromise(async (): Promise<QueryResult> => {
        // An interrupted run must not send its next step after the session was killed and queued for reset.
        const step = async <A>(work: () => Promise<A>) => {
          if (state.interrupted) throw new Error("interrupted")
          return work()
        }
        await step(() => conn.query(guards(options)))
        await step(() => conn.query("START TRANSACTION READ ONLY"))
        const result = await step(() => read(conn, sql, options))
        if (result.oversized) state.discard = true
        return result
      })

    /**
     * destroy() only half-closes the socket; a server blocked writing rows the reader stopped taking
     * would wait on it for good (even after KILL QUERY), so the socket itself is closed too.
     */
    const hardClose = (conn: mysql.PoolConnection) => {
      conn.destroy()
      core(conn).stream?.destroy()
    }

    /** KILL QUERY over a connection of its own: the pool may be exhausted by the very statements to kill. */
    const kill = (threadId: number) =>
      Effect.tryPromise(async () => {
        const killer = await mysql.createConnection(session)
        killer.on("error", ignoreError)
        try {
          await killer.query(`KILL QUERY ${Number(threadId)}`)
        } finally {
          await killer.end().catch(() => killer.destroy())
        }
      }).pipe(Effect.timeout(request.connectTimeoutMs), Effect.ignore)

    /**
     * Back to the pool after ROLLBACK and a reset, which the driver queues behind a statement still
     * running: an interrupted (killed) statement keeps its connection out of the pool until it has
     * ended, or until `boundMs` passes and the connection is closed instead.
     */
    const reuse = (conn: mysql.PoolConnection, boundMs: number) => {
      const bound = setTimeout(() => hardClose(conn), boundMs)
      conn
        .query("ROLLBACK")
        .then(() => conn.reset())
        .then(
          () => {
            clearTimeout(bound)
            conn.release()
          },
          () => {
            clearTimeout(bound)
            conn.destroy()
          }
        )
    }

    const recycle = (conn: mysql.PoolConnection, exit: Exit.Exit<unknown, ConnectorError>, state: LeaseState, options: QueryOptions) => {
      if (state.discard) return hardClose(conn)
      if (state.interrupted) return reuse(conn, options.timeoutMs + STATEMENT_GRACE_MS)
      if (!sessionReusable(exit)) return conn.destroy()
      reuse(conn, STATEMENT_GRACE_MS)
    }

    /**
     * A pooled connection for one statement, waited for within the statement's timeout; the options
     * it returns give the statement what is left of that timeout.
     */
    const lease = (options: QueryOptions) =>
      Effect.gen(function* () {
        const started = Date.now()
        const state: LeaseState = { interrupted: false, discard: false }
        const conn = yield* Effect.acquireRelease(
          Effect.interruptible(take.pipe(Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: statementTimedOut }))),
          (conn, exit) => Effect.sync(() => recycle(conn, exit as Exit.Exit<unknown, ConnectorError>, state, options))
        )
        const remaining = { ...options, timeoutMs: Math.max(1, options.timeoutMs - (Date.now() - started)) }
        const interrupted = Effect.suspend(() => {
          state.interrupted = true
          return kill(conn.threadId)
        })
        return { conn, state, options: remaining, interrupted }
      })

    const query = (sql: string, options: QueryOptions) =>
      Effect.scoped(
        Effect.gen(function* () {
          const leased = yield* lease(options)
          const result = yield* run(leased.conn, sql, leased.options, leased.state).pipe(
            Effect.mapError((error) => fromDriverError(error.error, request.scrub, "query")),
            Effect.onInterrupt(() => leased.interrupted),
            // A session lost under its statement (a network reset) leaves the statement running on the server until its timeout; the answer does not wait for the kill.
            Effect.tapError((error) => (error.step === "tcp" ? Effect.forkDaemon(kill(leased.conn.threadId)) : Effect.void))
          )
          if (result.oversized) yield* kill(leased.conn.threadId)
          return result
        })
      )

    /**
     * The statement's rows as the server sends them, read STREAM_BATCH_ROWS at a time: the driver
     * pauses the socket while the reader is behind, so memory holds about one batch.
     */
    const stream = (sql: string, options: QueryOptions) =>
      Effect.gen(function* () {
        const leased = yield* lease(options)
        const { conn } = leased
        let finished = false
        // A statement left unread is killed on the server and its connection dropped, not reused.
        yield* Effect.addFinalizer(() =>
          finished
            ? Effect.void
            : Effect.zipRight(
                kill(conn.threadId),
                Effect.sync(() => (leased.state.discard = true))
              )
        )
        const guarded = <A>(step: () => Promise<A>) =>
          Effect.tryPromise({ try: step, catch: (error) => fromDriverError(error, request.scrub, "query") })
        yield* guarded(() => conn.query(guards(leased.options)))
        yield* guarded(() => conn.query("START TRANSACTION READ ONLY"))
        const rows = core(conn)
          .query({ sql: attributedSql(sql, options), rowsAsArray: true })
          .stream({ highWaterMark: STREAM_BATCH_ROWS })
        // As for a buffered read, a lost connection fails the rows the reader waits for.
        const lost = (error: unknown) => rows.destroy(error as Error)
        core(conn).on("error", lost)
        yield* Effect.addFinalizer(() => Effect.sync(() => core(conn).off("error", lost)))
        const fields = yield* Effect.async<ReadonlyArray<mysql.FieldPacket>, ConnectorError>((resume) => {
          const onFields = (f: ReadonlyArray<mysql.FieldPacket>) => resume(Effect.succeed(f))
          rows.once("fields", onFields)
          rows.once("error", (error) => resume(Effect.fail(fromDriverError(error, request.scrub, "query"))))
          // A statement with no result set ends without fields.
          rows.once("end", () => resume(Effect.succeed([])))
        })
        const iterator: AsyncIterator<Row> = rows[Symbol.asyncIterator]()
        let left = options.maxRows + 1
        const next = guarded(async () => {
          const batch: Array<Row> = []
          while (batch.length < STREAM_BATCH_ROWS && left > 0) {
            const step = await iterator.next()
            if (step.done === true) {
              finished = true
              break
            }
            batch.push(step.value)
            left--
          }
          // At the cap the statement usually has nothing left (its LIMIT is the cap): a clean end keeps the connection.
          if (left === 0 && !finished) finished = (await iterator.next()).done === true
          return batch
        })
        return { columns: columnsOf(fields), next } satisfies RowBatches
      })

    const ping = Effect.acquireUseRelease(
      take,
      (conn) => Effect.tryPromise({ try: () => conn.query("select 1"), catch: (e) => fromDriverError(e, request.scrub, "connect") }),
      (conn) => Effect.sync(() => conn.release())
    ).pipe(Effect.asVoid)

    const internal = pool.pool as unknown as {
      _allConnections: { length: number }
      _freeConnections: { length: number }
      _connectionQueue: { length: number }
    }
    return {
      query,
      stream,
      ping,
      stats: () => ({
        total: internal._allConnections.length,
        idle: internal._freeConnections.length,
        waiting: internal._connectionQueue.length
      })
    } satisfies ConnectorPool
  })

export const MysqlConnector: Connector<MysqlConnection> = {
  capabilities: {
    db_type: "mysql",
    driver: "mysql2",
    transport: "MySQL protocol",
    read_only_guard: "START TRANSACTION READ ONLY + max_execution_time (MariaDB: max_statement_time) + sql_select_limit, one statement per call",
    server_side_cancel: true,
    ssh_tunnel: true,
    tls: true,
    local_file: false,
    limit_syntax: "limit",
    verified_against: "MariaDB 10.11"
  },
  address,
  privilegesProbe: `select count(*) as readable_tables from information_schema.tables
    where table_schema not in ('mysql', 'information_schema', 'performance_schema', 'sys')`,
  holdsServerSessions: true,
  open
}
