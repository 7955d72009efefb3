import { randomUUID } from "node:crypto"
import * as http from "node:http"
import * as https from "node:https"
import { ClickHouseLogLevel, type ClickHouseSettings, createClient } from "@clickhouse/client"
import { Effect, type Scope } from "effect"
import type { ClickhouseInput } from "../../src/domain/Connection"
import { attributedSql, type Connector, ConnectorError, type ConnectorPool, type Endpoint, type OpenRequest, type QueryOptions, type QueryResult, RowCollector } from "./Connector"
import { fromDriverError, statementTimedOut } from "./DriverErrors"
import { tlsOptions } from "./Tls"

type ClickhouseConnection = typeof ClickhouseInput.Type

const address = (c: ClickhouseConnection): Endpoint => ({ host: c.host, port: c.port ?? (tlsOptions(c.tls) === null ? 8123 : 8443) })

const POOL_SIZE = 4
const FORMAT = "JSONCompactEachRowWithNamesAndTypes"
// The client's request_timeout is a socket inactivity limit, so it must outlast the longest statement (an hour).
const REQUEST_TIMEOUT_MS = 3_660_000
const KILL_TIMEOUT_MS = 5_000

const origin = (scheme: string, e: Endpoint) => `${scheme}://${e.host.includes(":") ? `[${e.host}]` : e.host}:${e.port}`

const count = (group: NodeJS.ReadOnlyDict<ReadonlyArray<unknown>>) => Object.values(group).reduce((n, list) => n + (list?.length ?? 0), 0)

const open = (request: OpenRequest<ClickhouseConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const endpoint = request.endpoint ?? address(c)
    const tls = tlsOptions(c.tls, c.host)
    // Our own agents: the client's built-in TLS options cannot skip verification ("require"), and they give socket counts.
    const lookup = request.lookup === undefined ? {} : { lookup: request.lookup }
    const agent = (maxSockets: number) =>
      tls === null ? new http.Agent({ keepAlive: true, maxSockets, ...lookup }) : new https.Agent({ ...tls, keepAlive: true, maxSockets, ...lookup })
    const client = (httpAgent: http.Agent) =>
      Effect.acquireRelease(
        Effect.sync(() =>
          createClient({
            url: origin(tls === null ? "http" : "https", endpoint),
            username: c.username ?? "default",
            password: c.password ?? "",
            ...(c.database !== undefined ? { database: c.database } : {}),
            application: "sluice",
            http_agent: httpAgent,
            request_timeout: REQUEST_TIMEOUT_MS,
            log: { level: ClickHouseLogLevel.OFF }
          })
        ),
        (client) => Effect.promise(() => client.close())
      )
    const statements = agent(POOL_SIZE)
    const pool = yield* client(statements)
    // KILL QUERY goes through its own socket, so it never queues behind the statements it should stop.
    const control = yield* client(agent(1))

    // readonly comes last: a server that applies URL settings in order would refuse changes after it.
    const settings = (options: QueryOptions): ClickHouseSettings => ({
      max_execution_time: Math.max(1, Math.ceil(options.timeoutMs / 1000)),
      // Closing the response at the row cap (or on interrupt) stops the SELECT on the server.
      cancel_http_readonly_queries_on_client_close: 1,
      readonly: "1"
    })

    // Rows are streamed and the response closed after maxRows + 1 (or once the meter refuses one): max_result_rows would also cut subqueries short.
    const read = (sql: string, options: QueryOptions, queryId: string, signal: AbortSignal): Promise<QueryResult> =>
      pool
        .query({
          query: attributedSql(sql, options),
          format: FORMAT,
          query_id: queryId,
          abort_signal: signal,
          clickhouse_settings: settings(options)
        })
        .then(async (result) => {
          const header: Array<Array<unknown>> = []
          const rows = new RowCollector(options)
          reading: for await (const batch of result.stream<Array<unknown>>()) {
            for (const row of batch) {
              if (header.length < 2) header.push(row.json())
              else if (!rows.add(row.json())) break reading
            }
          }
          const [names = [], types = []] = header
          return rows.result(names.map((name, i) => ({ name: String(name), type: String(types[i]) })))
        })

    const kill = (queryId: string) =>
      Effect.tryPromise((signal) => control.command({ query: `KILL QUERY WHERE query_id = '${queryId}'`, abort_signal: signal })).pipe(
        Effect.timeout(KILL_TIMEOUT_MS),
        Effect.ignore
      )

    const query = (sql: string, options: QueryOptions) =>
      Effect.suspend(() => {
        const queryId = randomUUID()
        // Interrupting aborts the HTTP request (the signal); KILL QUERY makes sure the server stops too.
        return Effect.tryPromise({
          try: (signal) => read(sql, options, queryId, signal),
          catch: (error) => fromDriverError(error, request.scrub, "query")
        }).pipe(
          Effect.onInterrupt(() => kill(queryId)),
          Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: statementTimedOut })
        )
      })

    // A SELECT rather than /ping, which answers without checking the user, password or database.
    const ping = Effect.tryPromise({
      try: (signal) =>
        pool
          .query({ query: "SELECT 1", format: "JSONCompactEachRow", abort_signal: signal, clickhouse_settings: { readonly: "1" } })
          .then((result) => result.text()),
      catch: (error) => fromDriverError(error, request.scrub, "connect")
    }).pipe(
      Effect.timeoutFail({
        duration: request.connectTimeoutMs,
        onTimeout: () => new ConnectorError({ step: "timeout", message: "The database did not answer within the connection timeout" })
      }),
      Effect.asVoid
    )

    return {
      query,
      ping,
      stats: () => {
        const free = count(statements.freeSockets)
        return { total: count(statements.sockets) + free, idle: free, waiting: count(statements.requests) }
      }
    } satisfies ConnectorPool
  })

export const ClickhouseConnector: Connector<ClickhouseConnection> = {
  capabilities: {
    db_type: "clickhouse",
    driver: "@clickhouse/client",
    transport: "ClickHouse HTTP interface (8123, or 8443 with TLS)",
    read_only_guard:
      "readonly=1 and max_execution_time on every query, one statement per request, rows streamed and the response closed at the cap; a timeout aborts the request and sends KILL QUERY for its query_id",
    server_side_cancel: true,
    ssh_tunnel: true,
    tls: true,
    local_file: false,
    limit_syntax: "limit",
    verified_against: "protocol fake in test/fakes/ClickhouseFake.ts (no live server)"
  },
  address,
  privilegesProbe: `SELECT count() AS readable_tables FROM system.tables
    WHERE database NOT IN ('system', 'INFORMATION_SCHEMA', 'information_schema')`,
  open
}
