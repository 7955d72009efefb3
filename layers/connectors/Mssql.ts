import type { EventEmitter } from "node:events"
import { isIP, type LookupFunction, type Socket } from "node:net"
import { Effect, type Scope } from "effect"
// @ts-expect-error mssql 12 ships no type declarations; the few members used are typed below.
import mssqlModule from "mssql"
import type { MssqlInput } from "../../src/domain/Connection"
import { type Column, type Connector, ConnectorError, type ConnectorPool, type Endpoint, type OpenRequest, type QueryOptions, type QueryResult, RowCollector } from "./Connector"
import { fromDriverError } from "./DriverErrors"
import { dialPinned } from "./EgressPolicy"

type MssqlConnection = typeof MssqlInput.Type

/** The configuration `new mssql.ConnectionPool(config)` takes, as far as this connector sets it. */
export interface MssqlConfig {
  readonly server: string
  readonly port: number
  readonly user: string
  readonly password?: string
  readonly database?: string
  readonly connectionTimeout: number
  /** For the statements the connector sends itself (begin, rollback, ping); each query sets its own. */
  readonly requestTimeout: number
  readonly arrayRowMode: true
  /** Checks a pooled connection's socket before lending it, instead of a `SELECT 1` round trip. */
  readonly validateConnection: "socket"
  readonly pool: { readonly max: number; readonly min: number; readonly idleTimeoutMillis: number }
  readonly options: {
    readonly encrypt: boolean
    readonly trustServerCertificate: boolean
    readonly serverName?: string
    readonly cryptoCredentialsDetails?: { readonly ca?: string; readonly cert?: string; readonly key?: string }
    readonly readOnlyIntent: true
    readonly appName: string
    readonly useUTC: true
    readonly connector?: (target: Endpoint, lookup: unknown, signal: AbortSignal) => Promise<Socket>
  }
}

interface MssqlColumn {
  readonly name: string
  readonly type?: { readonly declaration?: string }
}

interface MssqlRequest extends EventEmitter {
  stream: boolean
  arrayRowMode: boolean
  batch(sql: string): Promise<unknown>
  cancel(): boolean
}

interface MssqlTransaction {
  begin(isolationLevel: number): Promise<unknown>
  rollback(): Promise<void>
  request(overrides: { requestTimeout: number }): MssqlRequest
}

interface MssqlPool extends EventEmitter {
  readonly connected: boolean
  readonly size: number
  readonly available: number
  readonly pending: number
  connect(): Promise<unknown>
  close(): Promise<unknown>
  transaction(): MssqlTransaction
  request(): MssqlRequest
}

const mssql = mssqlModule as {
  readonly ConnectionPool: new (config: MssqlConfig) => MssqlPool
  readonly ISOLATION_LEVEL: { readonly READ_COMMITTED: number }
}

const address = (c: MssqlConnection): Endpoint => ({ host: c.host, port: c.port ?? 1433 })

const POOL_SIZE = 4
const IDLE_MS = 60_000

/**
 * The driver configuration for a connection, dialling `endpoint` (the server, or an SSH tunnel's local end).
 * TLS: disable/allow (or none) → no encryption; prefer/require → encrypted, certificate not checked;
 * verify-ca/verify-full → certificate and host name checked against the connection's own host
 * (tedious cannot check the chain without the name, so verify-ca is as strict as verify-full).
 */
export const driverConfig = (c: MssqlConnection, endpoint: Endpoint, connectTimeoutMs: number): MssqlConfig => {
  const mode = c.tls?.mode ?? "disable"
  const encrypt = mode !== "disable" && mode !== "allow"
  const verify = mode === "verify-ca" || mode === "verify-full"
  const material = {
    ...(c.tls?.ca_pem !== undefined ? { ca: c.tls.ca_pem } : {}),
    ...(c.tls?.client_cert_pem !== undefined ? { cert: c.tls.client_cert_pem } : {}),
    ...(c.tls?.client_key_pem !== undefined ? { key: c.tls.client_key_pem } : {})
  }
  return {
    server: endpoint.host,
    port: endpoint.port,
    user: c.username,
    ...(c.password !== undefined ? { password: c.password } : {}),
    ...(c.database !== undefined ? { database: c.database } : {}),
    connectionTimeout: connectTimeoutMs,
    requestTimeout: connectTimeoutMs,
    arrayRowMode: true,
    validateConnection: "socket",
    pool: { max: POOL_SIZE, min: 0, idleTimeoutMillis: IDLE_MS },
    options: {
      encrypt,
      trustServerCertificate: encrypt && !verify,
      // The certificate names the database's host, not the tunnel's local end the driver dials.
      ...(encrypt && isIP(c.host) === 0 ? { serverName: c.host } : {}),
      ...(encrypt && Object.keys(material).length > 0 ? { cryptoCredentialsDetails: material } : {}),
      readOnlyIntent: true,
      appName: "sluice",
      useUTC: true
    }
  }
}

/**
 * tedious's socket: the endpoint, dialled through the egress lookup. A server that routes the login
 * elsewhere (an Azure SQL redirect) is refused: the route names an address no check has seen.
 */
const pinnedConnector = (endpoint: Endpoint, lookup: LookupFunction | undefined) => (target: Endpoint, _lookup: unknown, signal: AbortSignal) =>
  new Promise<Socket>((resolve, reject) => {
    if (target.host !== endpoint.host || target.port !== endpoint.port) {
      return reject(new ConnectorError({ step: "config", message: "The SQL Server routed the connection to another server; the gateway only connects to the connection's own server" }))
    }
    const socket = dialPinned(endpoint, lookup)
    const abort = () => {
      socket.destroy()
      reject(signal.reason)
    }
    const failed = (error: Error) => {
      signal.removeEventListener("abort", abort)
      reject(error)
    }
    signal.addEventListener("abort", abort, { once: true })
    socket.once("error", failed)
    socket.once("connect", () => {
      signal.removeEventListener("abort", abort)
      socket.off("error", failed)
      resolve(socket)
    })
  })

const open = (request: OpenRequest<MssqlConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const endpoint = request.endpoint ?? address(c)
    const base = driverConfig(c, endpoint, request.connectTimeoutMs)
    const config = { ...base, options: { ...base.options, connector: pinnedConnector(endpoint, request.lookup) } }
    const pool = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const pool = new mssql.ConnectionPool(config)
          // The pool re-emits connection and acquire failures; unheard, they would crash the process.
          pool.on("error", () => undefined)
          await pool.connect()
          return pool
        },
        catch: (error) => fromDriverError(error, request.scrub, "connect")
      }),
      (pool) => Effect.promise(() => pool.close().catch(() => undefined))
    )

    const begin = Effect.tryPromise({
      try: async () => {
        const transaction = pool.transaction()
        await transaction.begin(mssql.ISOLATION_LEVEL.READ_COMMITTED)
        return transaction
      },
      catch: (error) => fromDriverError(error, request.scrub, "connect")
    })

    // Also when the transaction is gone already (the server aborted it): the connection then went back to the pool.
    const rollback = (transaction: MssqlTransaction) => Effect.promise(() => transaction.rollback().catch(() => undefined))

    /** Streams the first result set, stopping with a TDS attention (a cancel on the server) once a row past the cap arrives or the meter refuses one. */
    const stream = (transaction: MssqlTransaction, sql: string, options: QueryOptions) =>
      Effect.async<QueryResult, ConnectorError>((resume) => {
        const timeout = Math.max(1, Math.ceil(options.timeoutMs))
        const statement = transaction.request({ requestTimeout: timeout })
        statement.stream = true
        statement.arrayRowMode = true
        let columns: Array<Column> | null = null
        const rows = new RowCollector(options)
        let failure: unknown = null
        let stopped = false
        let settle: () => void = () => undefined
        const settled = new Promise<void>((resolve) => (settle = resolve))
        const stop = () => {
          if (stopped) return
          stopped = true
          statement.cancel()
        }
        statement.on("recordset", (meta: ReadonlyArray<MssqlColumn>) => {
          if (columns !== null) return stop()
          columns = meta.map((m) => ({ name: m.name, type: m.type?.declaration ?? "unknown" }))
        })
        statement.on("row", (row: ReadonlyArray<unknown>) => {
          if (!stopped && !rows.add(row)) stop()
        })
        statement.on("error", (error: { code?: unknown }) => {
          // The cancel this connector sent itself to stop reading is not a failure.
          if (!(stopped && error.code === "ECANCEL")) failure ??= error
        })
        statement.once("done", () => {
          settle()
          if (failure !== null) return resume(Effect.fail(fromDriverError(failure, request.scrub, "query")))
          resume(Effect.succeed(rows.result(columns ?? [])))
        })
        // In the statement's own batch (no extra round trip); a statement blocked on another session's locks
        // fails with error 1222 at half its budget instead of waiting out the whole of it.
        const text = `SET LOCK_TIMEOUT ${Math.max(1, Math.floor(timeout / 2))};\n${options.attribution ? `${options.attribution}\n` : ""}${sql}`
        statement.batch(text).catch(() => undefined)
        // Interrupted: send the attention and wait until the server has acknowledged it, so the rollback can follow.
        return Effect.promise(() => {
          stop()
          return settled
        })
      })

    const query = (sql: string, options: QueryOptions) =>
      Effect.acquireUseRelease(begin, (transaction) => stream(transaction, sql, options), rollback)

    const ping = Effect.tryPromise({
      try: () => pool.request().batch("select 1"),
      catch: (error) => fromDriverError(error, request.scrub, "connect")
    }).pipe(Effect.asVoid)

    return {
      query,
      ping,
      stats: () => (pool.connected ? { total: pool.size, idle: pool.available, waiting: pool.pending } : { total: 0, idle: 0, waiting: 0 })
    } satisfies ConnectorPool
  })

export const MssqlConnector: Connector<MssqlConnection> = {
  capabilities: {
    db_type: "mssql",
    driver: "mssql (tedious)",
    transport: "TDS",
    read_only_guard:
      "SQL Server has no read-only session: ApplicationIntent=ReadOnly (a readable secondary in an availability group; " +
      "no effect on a standalone server), each statement in a READ COMMITTED transaction that is always rolled back, " +
      "SET LOCK_TIMEOUT and a request timeout; the login's own rights and the SQL-level check are the real guard",
    server_side_cancel: true,
    ssh_tunnel: true,
    tls: true,
    local_file: false,
    limit_syntax: "top",
    verified_against: "not verified against a live server (unit-tested; live suite runs with TEST_MSSQL_URL)"
  },
  address,
  privilegesProbe: "select count(*) as readable_tables from information_schema.tables",
  holdsServerSessions: true,
  open
}
