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
  type RowBatches,
  STREAM_BATCH_ROWS
} from "./Connector"
import { fromDriverError, sessionReusable } from "./DriverErrors"
import { tlsOptions } from "./Tls"

type MysqlConnection = typeof MysqlInput.Type

const address = (c: MysqlConnection): Endpoint => ({ host: c.host, port: c.port ?? 3306 })

const POOL_SIZE = 4
const IDLE_MS = 60_000

// mysql2 column type numbers, named as MySQL documents them.
const TYPE_NAMES = new Map(Object.entries(mysql.Types).map(([name, id]) => [id as number, name.toLowerCase()]))

const open = (request: OpenRequest<MysqlConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const endpoint = request.endpoint ?? address(c)
    const tls = tlsOptions(c.tls, c.host)
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() =>
        mysql.createPool({
          host: endpoint.host,
          port: endpoint.port,
          user: c.username,
          ...(c.password !== undefined ? { password: c.password } : {}),
          ...(c.database !== undefined ? { database: c.database } : {}),
          ...(tls !== null ? { ssl: tls as mysql.SslOptions } : {}),
          connectionLimit: POOL_SIZE,
          maxIdle: POOL_SIZE,
          idleTimeout: IDLE_MS,
          connectTimeout: request.connectTimeoutMs,
          // Never more than one statement per call: the driver itself refuses "a; b".
          multipleStatements: false,
          supportBigNumbers: true,
          bigNumberStrings: true,
          dateStrings: true,
          rowsAsArray: true
        })
      ),
      (pool) => Effect.promise(() => pool.end())
    )

    const connect = Effect.tryPromise({
      try: () => pool.getConnection(),
      catch: (error) => fromDriverError(error, request.scrub, "connect")
    })

    // MariaDB names the per-statement limit max_statement_time (seconds); MySQL, max_execution_time (ms).
    const flavour = yield* Effect.acquireUseRelease(
      connect,
      (conn) => Effect.tryPromise({ try: () => conn.query("select version()"), catch: (e) => fromDriverError(e, request.scrub, "connect") }),
      (conn) => Effect.sync(() => conn.release())
    ).pipe(Effect.map(([rows]) => (String((rows as Array<Array<unknown>>)[0]?.[0]).includes("MariaDB") ? "mariadb" : "mysql")))

    // The SQL guard reads backslashes in strings as escapes, so the session must too.
    const BACKSLASH_ESCAPES = "sql_mode = REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', '')"
    const guards = (options: QueryOptions) =>
      flavour === "mariadb"
        ? `SET SESSION max_statement_time = ${(options.timeoutMs / 1000).toFixed(3)}, sql_select_limit = ${options.maxRows + 1}, ${BACKSLASH_ESCAPES}`
        : `SET SESSION max_execution_time = ${Math.ceil(options.timeoutMs)}, sql_select_limit = ${options.maxRows + 1}, ${BACKSLASH_ESCAPES}`

    const run = (conn: mysql.PoolConnection, sql: string, options: QueryOptions) =>
      Effect.tryPromise(async (): Promise<QueryResult> => {
        await conn.query(guards(options))
        await conn.query("START TRANSACTION READ ONLY")
        const [rows, fields] = await conn.query({ sql: attributedSql(sql, options), rowsAsArray: true })
        const list = Array.isArray(rows) ? (rows as Array<Array<unknown>>) : []
        return {
          columns: (fields ?? []).map((f) => ({ name: f.name, type: TYPE_NAMES.get(f.type ?? -1) ?? String(f.type) })),
          rows: list.slice(0, options.maxRows),
          truncated: list.length > options.maxRows
        }
      })

    /**
     * destroy() only half-closes the socket; a server blocked writing rows the reader stopped taking
     * would wait on it for good (even after KILL QUERY), so the socket itself is closed too.
     */
    const hardClose = (conn: mysql.PoolConnection) => {
      conn.destroy()
      ;(conn as unknown as { connection: { stream?: { destroy: () => void } } }).connection.stream?.destroy()
    }

    const kill = (threadId: number) => Effect.tryPromise(() => pool.query(`KILL QUERY ${Number(threadId)}`)).pipe(Effect.ignore)

    const recycle = (conn: mysql.PoolConnection, exit: Exit.Exit<unknown, ConnectorError>) => {
      if (!sessionReusable(exit)) return conn.destroy()
      conn
        .query("ROLLBACK")
        .then(() => conn.reset())
        .then(
          () => conn.release(),
          () => conn.destroy()
        )
    }

    const query = (sql: string, options: QueryOptions) =>
      Effect.acquireUseRelease(
        connect,
        (conn) =>
          run(conn, sql, options).pipe(
            Effect.mapError((error) => fromDriverError(error.error, request.scrub, "query")),
            Effect.onInterrupt(() => kill(conn.threadId))
          ),
        (conn, exit) => Effect.sync(() => recycle(conn, exit))
      )

    /**
     * The statement's rows as the server sends them, read STREAM_BATCH_ROWS at a time: the driver
     * pauses the socket while the reader is behind, so memory holds about one batch.
     */
    const stream = (sql: string, options: QueryOptions) =>
      Effect.gen(function* () {
        let finished = false
        const conn = yield* Effect.acquireRelease(connect, (conn, exit) =>
          // A statement left unread is killed on the server and its connection dropped, not reused.
          finished ? Effect.sync(() => recycle(conn, exit as Exit.Exit<unknown, ConnectorError>)) : Effect.zipRight(kill(conn.threadId), Effect.sync(() => hardClose(conn)))
        )
        const guarded = <A>(step: () => Promise<A>) =>
          Effect.tryPromise({ try: step, catch: (error) => fromDriverError(error, request.scrub, "query") })
        yield* guarded(() => conn.query(guards(options)))
        yield* guarded(() => conn.query("START TRANSACTION READ ONLY"))
        const text = attributedSql(sql, options)
        const rows = (conn as unknown as { connection: { query: (o: object) => { stream: (o: object) => Readable } } }).connection
          .query({ sql: text, rowsAsArray: true })
          .stream({ highWaterMark: STREAM_BATCH_ROWS })
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
        return {
          columns: fields.map((f) => ({ name: f.name, type: TYPE_NAMES.get(f.type ?? -1) ?? String(f.type) })),
          next
        } satisfies RowBatches
      })

    const ping = Effect.acquireUseRelease(
      connect,
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
  open
}
