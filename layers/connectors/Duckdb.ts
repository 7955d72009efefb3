import { type DuckDBConnection, DuckDBInstance, JsonDuckDBValueConverter } from "@duckdb/node-api"
import { Effect, type Scope } from "effect"
import type { DuckdbInput } from "../../src/domain/Connection"
import {
  attributedSql,
  type Connector,
  ConnectorError,
  type ConnectorPool,
  type OpenRequest,
  type QueryOptions,
  type QueryResult,
  type Row,
  type RowBatches,
  RowCollector
} from "./Connector"
import { fromDriverError, statementTimedOut } from "./DriverErrors"

type DuckdbConnection = typeof DuckdbInput.Type

const POOL_SIZE = 2

// The database is opened read-only with no file or network access and no extensions, and the
// configuration is locked so a statement cannot turn any of that back on.
const GUARDED_OPTIONS = {
  access_mode: "READ_ONLY",
  enable_external_access: "false",
  autoinstall_known_extensions: "false",
  autoload_known_extensions: "false",
  allow_community_extensions: "false",
  lock_configuration: "true"
}

const open = (request: OpenRequest<DuckdbConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const instance = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => DuckDBInstance.create(request.connection.database, GUARDED_OPTIONS),
        catch: () => new ConnectorError({ step: "auth", message: "The DuckDB file does not exist or cannot be opened read-only" })
      }),
      (instance) => Effect.sync(() => instance.closeSync())
    )
    const idle: Array<DuckDBConnection> = []
    let total = 0
    let inFlight = 0
    const permits = yield* Effect.makeSemaphore(POOL_SIZE)
    yield* Effect.addFinalizer(() => Effect.sync(() => idle.splice(0).forEach((c) => c.closeSync())))

    const borrow = Effect.suspend(() => {
      const ready = idle.pop()
      if (ready !== undefined) return Effect.succeed(ready)
      return Effect.tryPromise({
        try: async () => {
          const connection = await instance.connect()
          // A file's own view named pg_class or duckdb_tables would otherwise answer in place of the system relation the
          // guard reads as one (and neither masks nor blocks it): system names resolve to the system catalog first.
          const file = String((await connection.runAndReadAll("select database_name from duckdb_databases() where not internal")).getRows()[0]![0])
          await connection.run(`set search_path = 'system.pg_catalog,system.main,"${file.replaceAll('"', '""').replaceAll("'", "''")}".main'`)
          return connection
        },
        catch: (error) => fromDriverError(error, request.scrub, "connect")
      }).pipe(Effect.tap(() => Effect.sync(() => total++)))
    })

    /** Reads chunk by chunk up to maxRows + 1 rows, stopping once the meter refuses one (a result left unread ends with the connection's next statement). */
    const run = (connection: DuckDBConnection, sql: string, options: QueryOptions) =>
      Effect.tryPromise({
        try: async (): Promise<QueryResult> => {
          const result = await connection.stream(attributedSql(sql, options))
          const types = result.columnTypes()
          const columns = result.columnNames().map((name, i) => ({ name, type: String(types[i]).toLowerCase() }))
          const rows = new RowCollector(options)
          reading: while (rows.room > 0) {
            const chunk = await result.fetchChunk()
            if (chunk === null || chunk.rowCount === 0) break
            for (const row of chunk.convertRows(JsonDuckDBValueConverter)) if (!rows.add(row)) break reading
          }
          return rows.result(columns)
        },
        catch: (error) => fromDriverError(error, request.scrub, "query")
      }).pipe(Effect.onInterrupt(() => Effect.sync(() => connection.interrupt())))

    // The wait for a connection counts against the statement's timeout; at the timeout a running statement is interrupted.
    const query = (sql: string, options: QueryOptions) =>
      Effect.suspend(() => {
        inFlight++
        return permits
          .withPermits(1)(
            Effect.acquireUseRelease(
              borrow,
              (connection) => run(connection, sql, options),
              (connection) => Effect.sync(() => idle.push(connection))
            )
          )
          .pipe(
            Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: statementTimedOut }),
            Effect.ensuring(Effect.sync(() => inFlight--))
          )
      })

    /** The statement's rows a DuckDB chunk (about 2,048 rows) at a time, holding one of the pool's connections until the scope closes. */
    const stream = (sql: string, options: QueryOptions) =>
      Effect.gen(function* () {
        yield* Effect.acquireRelease(Effect.sync(() => inFlight++), () => Effect.sync(() => inFlight--))
        yield* Effect.acquireRelease(Effect.interruptible(permits.take(1)), () => permits.release(1))
        let finished = false
        const connection = yield* Effect.acquireRelease(borrow, (connection) =>
          Effect.sync(() => {
            // A result left unread is abandoned before the connection serves anyone else.
            if (!finished) connection.interrupt()
            idle.push(connection)
          })
        )
        const guarded = <A>(step: () => Promise<A>) =>
          Effect.tryPromise({ try: step, catch: (error) => fromDriverError(error, request.scrub, "query") }).pipe(
            Effect.onInterrupt(() => Effect.sync(() => connection.interrupt()))
          )
        const result = yield* guarded(() => connection.stream(attributedSql(sql, options)))
        const types = result.columnTypes()
        let left = options.maxRows + 1
        const next = Effect.suspend(() =>
          finished || left <= 0
            ? Effect.succeed<ReadonlyArray<Row>>([])
            : guarded(async (): Promise<ReadonlyArray<Row>> => {
                const chunk = await result.fetchChunk()
                if (chunk === null || chunk.rowCount === 0) {
                  finished = true
                  return []
                }
                const rows = chunk.convertRows(JsonDuckDBValueConverter)
                left -= rows.length
                return rows
              })
        )
        return {
          columns: result.columnNames().map((name, i) => ({ name, type: String(types[i]).toLowerCase() })),
          next
        } satisfies RowBatches
      })

    return {
      query,
      stream,
      ping: Effect.asVoid(query("select 1", { timeoutMs: request.connectTimeoutMs, maxRows: 1 })),
      stats: () => ({ total, idle: idle.length, waiting: Math.max(0, inFlight - POOL_SIZE) })
    } satisfies ConnectorPool
  })

export const DuckdbConnector: Connector<DuckdbConnection> = {
  capabilities: {
    db_type: "duckdb",
    driver: "@duckdb/node-api",
    transport: "local file, in process",
    read_only_guard: "access_mode=READ_ONLY, enable_external_access=false, no extension autoload, lock_configuration=true",
    server_side_cancel: true,
    ssh_tunnel: false,
    tls: false,
    local_file: true,
    limit_syntax: "limit",
    verified_against: "DuckDB 1.5 files"
  },
  address: () => null,
  privilegesProbe: "select count(*) as readable_tables from information_schema.tables",
  open
}
