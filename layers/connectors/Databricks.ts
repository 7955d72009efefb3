import * as https from "node:https"
import { isIP, type LookupFunction } from "node:net"
import { checkServerIdentity } from "node:tls"
import { connections, DBSQLClient, thrift } from "@databricks/sql"
import { Effect, Exit, type Scope } from "effect"
import type { DatabricksInput } from "../../src/domain/Connection"
import { attributedSql, type Connector, ConnectorError, type ConnectorPool, type Endpoint, type OpenRequest, type QueryOptions, type QueryResult, RowCollector } from "./Connector"
import { fromDriverError, statementTimedOut } from "./DriverErrors"

type DatabricksConnection = typeof DatabricksInput.Type
type ConnectOptions = Parameters<DBSQLClient["connect"]>[0]
type SessionRequest = NonNullable<Parameters<DBSQLClient["openSession"]>[0]>
type Session = Awaited<ReturnType<DBSQLClient["openSession"]>>
type Operation = Awaited<ReturnType<Session["executeStatement"]>>

/** The workspace host as pasted from the console, without a scheme or trailing slash. */
const hostOf = (c: DatabricksConnection) => c.host.replace(/^https:\/\//i, "").replace(/\/+$/, "")

const address = (c: DatabricksConnection): Endpoint => ({ host: hostOf(c), port: 443 })

// One session runs several statements at once; more wait here rather than pile up on the warehouse.
const CONCURRENT_STATEMENTS = 4
const FETCH_ROWS = 10_000
const SOCKET_TIMEOUT_MS = 60_000

export interface DatabricksConfig {
  readonly connect: ConnectOptions
  readonly session: SessionRequest
  /** The name the workspace's certificate must carry. */
  readonly serverName: string
}

/** The driver configuration for a connection, dialling `endpoint`. */
export const driverConfig = (c: DatabricksConnection, endpoint: Endpoint, connectTimeoutMs: number): DatabricksConfig => ({
  connect: {
    host: endpoint.host,
    port: endpoint.port,
    path: c.http_path,
    authType: "access-token",
    token: c.access_token ?? "",
    userAgentEntry: "sluice",
    socketTimeout: SOCKET_TIMEOUT_MS,
    retryMaxAttempts: 3,
    retriesTimeout: connectTimeoutMs,
    // Nothing about the gateway's statements goes to the driver's own telemetry endpoint.
    telemetryEnabled: false,
    // In Arrow results (what warehouses send): DECIMAL as exact strings, BIGINT as bigint (made a string below), not rounded numbers.
    preserveBigNumericPrecision: true
  },
  session: {
    ...(c.catalog !== undefined ? { initialCatalog: c.catalog } : {}),
    ...(c.schema_name !== undefined ? { initialSchema: c.schema_name } : {})
  },
  serverName: hostOf(c)
})

/** An HTTPS agent that checks the workspace's certificate against the system roots and its host name. */
export const verifyingAgent = (serverName: string, lookup?: LookupFunction) =>
  new https.Agent({
    ...(lookup === undefined ? {} : { lookup }),
    keepAlive: true,
    timeout: SOCKET_TIMEOUT_MS,
    minVersion: "TLSv1.2",
    rejectUnauthorized: true,
    ...(isIP(serverName) === 0 ? { servername: serverName } : {}),
    checkServerIdentity: (_dialled, cert) => checkServerIdentity(serverName, cert)
  })

class VerifiedConnection extends connections.HttpConnection {
  constructor(
    options: ConstructorParameters<typeof connections.HttpConnection>[0],
    context: ConstructorParameters<typeof connections.HttpConnection>[1],
    private readonly verified: https.Agent
  ) {
    super(options, context)
  }
  override getAgent() {
    return Promise.resolve(this.verified)
  }
  // node-fetch follows redirects to any address by default; a workspace that redirects fails instead.
  override async getThriftConnection() {
    const connection = await super.getThriftConnection()
    const thrift = connection as unknown as { config: Record<string, unknown> }
    thrift.config = { ...thrift.config, redirect: "error" }
    return connection
  }
}

const silent = { log: () => undefined }

const makeClient = (agent: https.Agent) => {
  const client = new DBSQLClient({ logger: silent })
  // @databricks/sql 2.0.0 builds its HTTPS agent with rejectUnauthorized: false (databricks-sql-nodejs#462): give it one that verifies.
  Object.assign(client, {
    createConnectionProvider: (options: ConnectOptions) => new VerifiedConnection(client["getConnectionOptions"](options), client, agent)
  })
  return client
}

const typeName = (id: number | undefined) =>
  (id === undefined ? "unknown" : (thrift.TCLIService_types.TTypeId[id] ?? String(id))).replace(/_TYPE$/, "").toLowerCase()

const failed = (scrub: (message: string) => string) => (error: unknown) =>
  (error as { errorCode?: unknown } | null)?.errorCode === "TIMEOUT" ? statementTimedOut() : fromDriverError(error, scrub, "query")

const open = (request: OpenRequest<DatabricksConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const config = driverConfig(c, request.endpoint ?? address(c), request.connectTimeoutMs)
    const agent = yield* Effect.acquireRelease(Effect.sync(() => verifyingAgent(config.serverName, request.lookup)), (agent) => Effect.sync(() => agent.destroy()))
    const client = yield* Effect.acquireRelease(Effect.sync(() => makeClient(agent)), (client) =>
      Effect.promise(() => client.close().catch(() => undefined))
    )
    const session = yield* Effect.tryPromise({
      try: async () => {
        await client.connect(config.connect)
        return await client.openSession(config.session)
      },
      catch: (error) => fromDriverError(error, request.scrub, "connect")
    }).pipe(
      Effect.timeoutFail({
        duration: request.connectTimeoutMs,
        onTimeout: () => new ConnectorError({ step: "timeout", message: "Databricks did not open a session in time (is the host right, and is the SQL warehouse running?)" })
      })
    )
    // Closing the client closes its sessions; this closes the session first, while the client still runs.
    yield* Effect.addFinalizer(() => Effect.promise(() => session.close().catch(() => undefined)))

    const permits = yield* Effect.makeSemaphore(CONCURRENT_STATEMENTS)
    let inFlight = 0

    const execute = (sql: string, options: QueryOptions) =>
      Effect.tryPromise({
        try: () =>
          session.executeStatement(attributedSql(sql, options), {
            queryTimeout: Math.max(1, Math.ceil(options.timeoutMs / 1000)),
            maxRows: options.maxRows + 1,
            // Results come inline over the session, capped, rather than as files fetched from cloud storage.
            useCloudFetch: false
          }),
        catch: failed(request.scrub)
      })

    const read = (operation: Operation, options: QueryOptions) =>
      Effect.tryPromise({
        try: async (): Promise<QueryResult> => {
          const schema = await operation.getSchema()
          const described = (schema?.columns ?? []).map((col) => ({
            name: col.columnName,
            type: typeName(col.typeDesc.types[0]?.primitiveEntry?.type)
          }))
          const rows = new RowCollector(options)
          const valuesOf = (row: object) =>
            described.map(({ name }) => {
              const value = (row as Record<string, unknown>)[name]
              return typeof value === "bigint" ? value.toString() : value
            })
          reading: while (schema !== null && rows.room > 0 && (await operation.hasMoreRows())) {
            for (const row of await operation.fetchChunk({ maxRows: Math.min(FETCH_ROWS, rows.room) })) if (!rows.add(valuesOf(row))) break reading
          }
          return rows.result(described)
        },
        catch: failed(request.scrub)
      })

    /** Closes the operation; one that did not complete (timed out, interrupted, failed) is cancelled on the warehouse first. */
    const finish = (operation: Operation, exit: Exit.Exit<unknown, unknown>) =>
      Effect.promise(async () => {
        if (Exit.isFailure(exit)) await operation.cancel().catch(() => undefined)
        await operation.close().catch(() => undefined)
      })

    const query = (sql: string, options: QueryOptions) =>
      Effect.suspend(() => {
        inFlight++
        return permits
          .withPermits(1)(
            Effect.acquireUseRelease(execute(sql, options), (operation) => read(operation, options), finish).pipe(
              Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: statementTimedOut })
            )
          )
          .pipe(Effect.ensuring(Effect.sync(() => inFlight--)))
      })

    return {
      query,
      ping: Effect.asVoid(query("select 1", { timeoutMs: request.connectTimeoutMs, maxRows: 1 })),
      stats: () => ({
        total: 1,
        idle: inFlight === 0 ? 1 : 0,
        waiting: Math.max(0, inFlight - CONCURRENT_STATEMENTS)
      })
    } satisfies ConnectorPool
  })

export const DatabricksConnector: Connector<DatabricksConnection> = {
  capabilities: {
    db_type: "databricks",
    driver: "@databricks/sql",
    transport: "Thrift over HTTPS",
    read_only_guard:
      "none at the session: Databricks SQL warehouses have no read-only session or transaction; per-statement queryTimeout " +
      "and a cancel on timeout or interrupt only. The token's own grants and the SQL-level check are the real guard",
    server_side_cancel: true,
    ssh_tunnel: false,
    tls: true,
    local_file: false,
    limit_syntax: "limit",
    verified_against: "not verified against a live server (Thrift fake in the tests; live suite runs with TEST_DATABRICKS_HOST, TEST_DATABRICKS_HTTP_PATH, TEST_DATABRICKS_TOKEN)"
  },
  address,
  alwaysTls: () => true,
  privilegesProbe: "select count(*) as readable_tables from information_schema.tables where table_schema <> 'information_schema'",
  open
}
