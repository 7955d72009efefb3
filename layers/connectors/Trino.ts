import * as http from "node:http"
import * as https from "node:https"
import { Effect, type Scope } from "effect"
import { BasicAuth, type Iterator as Pages, type QueryResult as Page, Trino } from "trino-client"
import type { TrinoInput } from "../../src/domain/Connection"
import { attributedSql, type Connector, ConnectorError, type ConnectorPool, type Endpoint, type OpenRequest, type QueryOptions, type QueryResult, RowCollector } from "./Connector"
import { fromDriverError, statementTimedOut } from "./DriverErrors"
import { tlsOptions } from "./Tls"

type TrinoConnection = typeof TrinoInput.Type

// Trino accepts a password only over HTTPS, so a password switches the connection to it.
const secure = (c: TrinoConnection) => c.password !== undefined || tlsOptions(c.tls) !== null

const address = (c: TrinoConnection): Endpoint => ({ host: c.host, port: c.port ?? (secure(c) ? 8443 : 8080) })

// The REST protocol holds no session between requests: the pool is a number of statements run at once.
const POOL_SIZE = 4
const CANCEL_TIMEOUT_MS = 5_000

/**
 * trino-client keeps the page being followed (with its nextUri) and its HTTP client private, and follows
 * empty pages without returning; cancelling a running statement as the protocol asks (DELETE nextUri) needs both.
 */
interface ClientInternals {
  readonly client: {
    request: <T>(config: { url: string; method?: string }) => Promise<T>
    readonly clientConfig: Record<string, unknown>
  }
}
interface PagesInternals {
  readonly iter: { readonly queryResult: Page }
}

const origin = (scheme: string, e: Endpoint) => `${scheme}://${e.host.includes(":") ? `[${e.host}]` : e.host}:${e.port}`

/** Follows pages until the statement finishes, maxRows + 1 rows are in or the meter refuses one; stops early once the caller is gone. */
const collect = async (pages: Pages<Page>, options: QueryOptions, signal: AbortSignal): Promise<QueryResult> => {
  let columns: NonNullable<Page["columns"]> = []
  const rows = new RowCollector(options)
  reading: while (!signal.aborted && rows.room > 0) {
    const { value: page, done } = await pages.next()
    if (page.error !== undefined) throw page.error
    if (page.columns !== undefined) columns = page.columns
    // The driver hands the last page back again once it is done.
    if (done) break
    for (const row of page.data ?? []) if (!rows.add(row)) break reading
  }
  return rows.result(columns.map((c) => ({ name: c.name, type: c.type })))
}

const open = (request: OpenRequest<TrinoConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const endpoint = request.endpoint ?? address(c)
    const tls = tlsOptions(c.tls, c.host)
    const server = origin(secure(c) ? "https" : "http", endpoint)
    const trino = Trino.create({
      server,
      source: "sluice",
      ...(c.catalog !== undefined ? { catalog: c.catalog } : {}),
      ...(c.schema_name !== undefined ? { schema: c.schema_name } : {}),
      ...(c.password !== undefined ? { auth: new BasicAuth(c.username, c.password) } : { extraHeaders: { "X-Trino-User": c.username } })
    })
    const client = (trino as unknown as ClientInternals).client
    const lookup = request.lookup === undefined ? {} : { lookup: request.lookup }
    const agents = {
      httpAgent: new http.Agent({ keepAlive: true, ...lookup }),
      // Without TLS settings, HTTPS verifies the server against the system's CAs.
      httpsAgent: new https.Agent({ ...(tls ?? {}), keepAlive: true, ...lookup })
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => Object.values(agents).forEach((agent) => agent.destroy())))
    // Every request stays on the checked server: redirects are not followed, and a nextUri elsewhere is refused, not fetched.
    Object.assign(client.clientConfig, { maxRedirects: 0, ...agents })
    const send = client.request.bind(client)
    const sameOrigin = (url: string) => URL.canParse(url, server) && new URL(url, server).origin === new URL(server).origin
    client.request = (config) =>
      sameOrigin(config.url)
        ? send(config)
        : Promise.reject(new ConnectorError({ step: "query", message: "The Trino server sent the client to another address; the gateway only follows the connection's own server" }))

    const cancel = (pages: Pages<Page>) =>
      Effect.suspend(() => {
        const nextUri = (pages as unknown as PagesInternals).iter.queryResult.nextUri
        if (nextUri === undefined) return Effect.void
        return Effect.tryPromise(() => client.request({ url: nextUri, method: "DELETE" })).pipe(Effect.timeout(CANCEL_TIMEOUT_MS), Effect.ignore)
      })

    const statement = (sql: string, options: QueryOptions, during: "connect" | "query") =>
      Effect.gen(function* () {
        const pages = yield* Effect.tryPromise({
          try: () =>
            trino.query({
              query: attributedSql(sql, options),
              // Trino has no read-only session; the server's own limit is a backstop for a lost DELETE.
              session: { query_max_execution_time: `${Math.max(1, Math.ceil(options.timeoutMs / 1000))}s` }
            }),
          catch: (error) => fromDriverError(error, request.scrub, during)
        })
        const result = yield* Effect.tryPromise({
          try: (signal) => collect(pages, options, signal),
          catch: (error) => fromDriverError(error, request.scrub, during)
        }).pipe(Effect.onInterrupt(() => cancel(pages)))
        // A truncated or oversized result leaves the statement running: stop it.
        if (result.truncated || result.oversized) yield* cancel(pages)
        return result
      }).pipe(Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: statementTimedOut }))

    const slots = yield* Effect.makeSemaphore(POOL_SIZE)
    let inFlight = 0
    const inSlot = <A>(effect: Effect.Effect<A, ConnectorError>) =>
      Effect.suspend(() => {
        inFlight++
        return slots.withPermits(1)(effect).pipe(Effect.ensuring(Effect.sync(() => inFlight--)))
      })

    return {
      query: (sql, options) => inSlot(statement(sql, options, "query")),
      ping: inSlot(Effect.asVoid(statement("SELECT 1", { timeoutMs: request.connectTimeoutMs, maxRows: 1 }, "connect"))),
      stats: () => ({ total: POOL_SIZE, idle: Math.max(0, POOL_SIZE - inFlight), waiting: Math.max(0, inFlight - POOL_SIZE) })
    } satisfies ConnectorPool
  })

export const TrinoConnector: Connector<TrinoConnection> = {
  capabilities: {
    db_type: "trino",
    driver: "trino-client",
    transport: "Trino client REST protocol (/v1/statement) over HTTP 8080, or HTTPS 8443 with TLS or a password",
    read_only_guard:
      "no read-only session in Trino: the gateway's SQL check decides; query_max_execution_time on every statement, and DELETE on nextUri at the timeout or the row cap",
    server_side_cancel: true,
    ssh_tunnel: true,
    tls: true,
    local_file: false,
    limit_syntax: "limit",
    verified_against: "protocol fake in test/fakes/TrinoFake.ts (no live server)"
  },
  address,
  // Trino takes passwords over HTTPS only.
  alwaysTls: (c) => c.password !== undefined,
  privilegesProbe: "select count(*) as readable_tables from system.jdbc.tables where table_schem <> 'information_schema'",
  open
}
