import * as http from "node:http"
import * as https from "node:https"
import { createRequire } from "node:module"
import { Duration, Effect, Pool, type Scope } from "effect"
import type { Column as DriverColumn, Connection, ConnectionOptions, RowStatement, SnowflakeLogger } from "snowflake-sdk"
import type { SnowflakeInput } from "../../src/domain/Connection"
import { attributedSql, type Connector, ConnectorError, type ConnectorPool, type Endpoint, type OpenRequest, type QueryOptions, type QueryResult, RowCollector } from "./Connector"
import { fromDriverError, sessionReusable, statementTimedOut } from "./DriverErrors"
import { allowAnyTarget, checkedAgent, watchRefusals } from "./EgressPolicy"

type SnowflakeConnection = typeof SnowflakeInput.Type
type Driver = typeof import("snowflake-sdk")

const address = (c: SnowflakeConnection): Endpoint => ({ host: c.host ?? `${c.account}.snowflakecomputing.com`, port: 443 })

const POOL_SIZE = 4
const IDLE = Duration.seconds(60)
const CANCEL_MS = 5_000
const LOGOUT_MS = 5_000

interface Session {
  readonly connection: Connection
  readonly agents: ReadonlyArray<http.Agent>
  /** Fails a statement at once when the egress policy refuses a socket it needs (a result chunk's host), instead of after the driver's retries. */
  readonly guard: ReturnType<typeof watchRefusals>["guard"]
}

const quiet = () => undefined
const silent: SnowflakeLogger = { error: quiet, warn: quiet, info: quiet, debug: quiet, trace: quiet }

let loading: Promise<Driver> | undefined

/** snowflake-sdk takes ~0.7 s to import, so it loads with the first Snowflake connection, not with the gateway. */
const loadDriver = () =>
  (loading ??= (async () => {
    // Read by the driver as it loads: no probing of cloud metadata hosts (AWS, Azure, GCP) and no connection-shape telemetry.
    process.env["SNOWFLAKE_DISABLE_PLATFORM_DETECTION"] = "true"
    process.env["SF_TELEMETRY_DISABLE_CONNECTION_SHAPE"] = "true"
    // A CommonJS module: its functions sit on the default export at run time, whatever the typings say.
    const snowflake = ((await import("snowflake-sdk")) as unknown as { default: Driver }).default
    // No log file or console output, and no OCSP calls to the CAs' responders (third-party hosts);
    // the certificate chain and host name are still verified by Node's TLS, as a test shows.
    snowflake.configure({ logLevel: "OFF", customLogger: silent, disableOCSPChecks: true })
    // The driver's requests follow no redirect: one would leave the checked agent for another host (https to http), and a 307 resends the login's password.
    const requests = createRequire(import.meta.url)("snowflake-sdk/dist/lib/http/axios_instance.js") as { default: { defaults: { maxRedirects?: number } } }
    requests.default.defaults.maxRedirects = 0
    return snowflake
  })())

/** The driver's errors carry the socket error as `cause` and the server's SQLSTATE beside its own code. */
const driverError = (error: unknown, scrub: (message: string) => string, during: "connect" | "query") => {
  const e = error as { code?: unknown; sqlState?: unknown; cause?: { code?: unknown }; message?: unknown } | null
  const code = typeof e?.cause?.code === "string" ? e.cause.code : typeof e?.sqlState === "string" ? e.sqlState : String(e?.code ?? "")
  return fromDriverError({ code, message: e?.message }, scrub, during)
}

// PUT and GET move files between the gateway's disk and a stage; the driver runs them locally.
const FILE_TRANSFER = /^\s*(?:(?:--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)\s*)*(?:put|get)\s/i

/** Integers that fit a JSON number become numbers; decimals and wider integers stay exact strings. */
const exact = (value: unknown, column: DriverColumn | undefined) => {
  if (typeof value !== "string" || column === undefined || !column.isNumber()) return value
  if (column.getType() === "real") return Number(value)
  return column.getScale() === 0 && Number.isSafeInteger(Number(value)) ? Number(value) : value
}

const open = (request: OpenRequest<SnowflakeConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const endpoint = request.endpoint ?? address(c)
    const snowflake = yield* Effect.tryPromise({
      try: loadDriver,
      catch: () => new ConnectorError({ step: "config", message: "The Snowflake driver could not be loaded" })
    })
    const options: ConnectionOptions = {
      account: c.account,
      accessUrl: `https://${endpoint.host}:${endpoint.port}`,
      username: c.username,
      password: c.password ?? "",
      ...(c.warehouse !== undefined ? { warehouse: c.warehouse } : {}),
      ...(c.database !== undefined ? { database: c.database } : {}),
      ...(c.schema_name !== undefined ? { schema: c.schema_name } : {}),
      ...(c.role !== undefined ? { role: c.role } : {}),
      application: "sluice",
      certRevocationCheckMode: "DISABLED",
      clientSessionKeepAlive: false,
      // One retry: the connect timeout, not the driver's five-minute login backoff, bounds a login.
      sfRetryMaxLoginRetries: 1
    }
    const egress = request.egress ?? allowAnyTarget
    let total = 0
    let busy = 0
    let waiting = 0

    const logout = (session: Session) =>
      Effect.async<void>((resume) => {
        session.connection.destroy(() => resume(Effect.void))
      }).pipe(
        Effect.timeout(LOGOUT_MS),
        Effect.ignore,
        Effect.ensuring(Effect.sync(() => {
          total--
          session.agents.forEach((agent) => agent.destroy())
        }))
      )

    const login = Effect.acquireRelease(
      Effect.suspend(() => {
        // Every socket of the session, to the account or to the cloud storage holding its result chunks, dials an address the egress policy checked.
        const refusals = watchRefusals(egress)
        const agents = { http: checkedAgent(refusals.policy, new http.Agent({ keepAlive: true })), https: checkedAgent(refusals.policy, new https.Agent({ keepAlive: true })) }
        // The driver asks for an agent with each request, and uses it only when its protocol is the request's.
        const agentClass = (wanted: { readonly protocol?: string }) => (wanted.protocol === "http:" ? agents.http : agents.https)
        const destroyAgents = Effect.sync(() => Object.values(agents).forEach((agent) => agent.destroy()))
        return Effect.async<Connection, ConnectorError>((resume) => {
          let connection: Connection
          try {
            connection = snowflake.createConnection({ ...options, agentClass } as ConnectionOptions)
          } catch (error) {
            resume(Effect.fail(new ConnectorError({ step: "config", message: request.scrub(String((error as Error).message)) })))
            return
          }
          connection.connect((error) => resume(error ? Effect.fail(driverError(error, request.scrub, "connect")) : Effect.succeed(connection)))
          return Effect.sync(() => connection.destroy(() => undefined))
        }).pipe(
          refusals.guard,
          Effect.timeoutFail({
            duration: request.connectTimeoutMs,
            onTimeout: () => fromDriverError({ code: "ETIMEDOUT" }, request.scrub, "connect")
          }),
          Effect.onError(() => destroyAgents),
          Effect.map((connection): Session => ({ connection, agents: Object.values(agents), guard: refusals.guard })),
          Effect.tap(() => Effect.sync(() => total++))
        )
      }),
      logout
    )

    const sessions = yield* Pool.makeWithTTL({ acquire: login, min: 0, max: POOL_SIZE, timeToLive: IDLE })

    const cancel = (statement: RowStatement | undefined) =>
      statement === undefined
        ? Effect.void
        : Effect.async<void>((resume) => {
            statement.cancel(() => resume(Effect.void))
          }).pipe(Effect.timeout(CANCEL_MS), Effect.ignore)

    const run = ({ connection, guard }: Session, sql: string, options: QueryOptions) =>
      Effect.suspend(() => {
        let statement: RowStatement | undefined
        return Effect.tryPromise({
          try: async (): Promise<QueryResult> => {
            const done = await new Promise<RowStatement>((resolve, reject) => {
              statement = connection.execute({
                sqlText: attributedSql(sql, options),
                streamResult: true,
                rowMode: "array",
                fetchAsString: ["Number", "Date", "Buffer"],
                parameters: { MULTI_STATEMENT_COUNT: 1, STATEMENT_TIMEOUT_IN_SECONDS: Math.max(1, Math.ceil(options.timeoutMs / 1000)) },
                complete: (error, stmt) => (error ? reject(error) : resolve(stmt))
              })
            })
            const columns = done.getColumns() ?? []
            const rows = new RowCollector(options)
            // Leaving the loop destroys the stream, so chunks past the cap (or past what the meter allows) are not downloaded.
            for await (const row of done.streamRows() as AsyncIterable<Array<unknown>>) {
              if (!rows.add(row.map((value, i) => exact(value, columns[i])))) break
            }
            return rows.result(columns.map((column) => ({ name: column.getName(), type: column.getType() })))
          },
          catch: (error) => driverError(error, request.scrub, "query")
        }).pipe(
          Effect.onInterrupt(() => cancel(statement)),
          guard,
          Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: statementTimedOut })
        )
      })

    const query = (sql: string, options: QueryOptions) =>
      FILE_TRANSFER.test(sql)
        ? Effect.fail(new ConnectorError({ step: "query", message: "PUT and GET file transfers are not allowed through the gateway" }))
        : Effect.scoped(
            Effect.gen(function* () {
              waiting++
              const session = yield* Pool.get(sessions).pipe(Effect.ensuring(Effect.sync(() => waiting--)))
              busy++
              yield* Effect.addFinalizer(() => Effect.sync(() => busy--))
              return yield* run(session, sql, options).pipe(
                Effect.onExit((exit) => (sessionReusable(exit) ? Effect.void : Pool.invalidate(sessions, session)))
              )
            })
          )

    return {
      query,
      ping: Effect.asVoid(query("select 1", { timeoutMs: request.connectTimeoutMs, maxRows: 1 })),
      stats: () => ({ total, idle: Math.max(0, total - busy), waiting })
    } satisfies ConnectorPool
  })

export const SnowflakeConnector: Connector<SnowflakeConnection> = {
  capabilities: {
    db_type: "snowflake",
    driver: "snowflake-sdk",
    transport: "HTTPS (Snowflake REST API)",
    read_only_guard:
      "MULTI_STATEMENT_COUNT=1 and STATEMENT_TIMEOUT_IN_SECONDS with every statement, PUT/GET refused; Snowflake has no read-only session, so writes are stopped by the gateway's read-only check and the role's grants",
    server_side_cancel: true,
    ssh_tunnel: false,
    tls: true,
    local_file: false,
    limit_syntax: "limit",
    verified_against: "protocol fake in test/fakes (no live server)"
  },
  address,
  alwaysTls: () => true,
  privilegesProbe: `select count(*) as readable_tables from information_schema.tables
    where table_schema <> 'INFORMATION_SCHEMA'`,
  open
}
