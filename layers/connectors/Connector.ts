import type { LookupAddress } from "node:dns"
import type { LookupFunction } from "node:net"
import { Effect, type Exit, Schema, type Scope } from "effect"
import type { ConnectionInput, DbType } from "../../src/domain/Connection"

/** Where a connection attempt or statement failed; the diagnose route reports the same steps. */
export const FailureStep = Schema.Literal("config", "dns", "tcp", "tls", "ssh", "auth", "privileges", "query", "timeout")
export type FailureStep = typeof FailureStep.Type

/** A sanitized failure: the message never carries a secret, a stack trace or the driver's raw error. */
export class ConnectorError extends Schema.TaggedError<ConnectorError>()("ConnectorError", {
  step: FailureStep,
  message: Schema.String,
  /** The database could not compute a value of some row (a cast, a division, a number out of range): SQLSTATE class 22 and the engines' own names for it. */
  data: Schema.optional(Schema.Boolean)
}) {}

/**
 * How long past its timeout a statement's answer may take at the latest, for the cancel on the server
 * to land: a database that never answers (a stalled host) still fails the call by then.
 */
export const DEADLINE_GRACE_MS = 500

export interface QueryOptions {
  readonly timeoutMs: number
  /** Rows kept; one more is read to tell a complete result from a truncated one. */
  readonly maxRows: number
  /** A comment naming who runs the statement, for the database's own logs. */
  readonly attribution?: string
  /** Counts the result's bytes as its rows are read; once it refuses, reading stops (the statement is cancelled) and the result is `oversized`. */
  readonly meter?: ByteMeter
  /** BigQuery: the most the job may bill, below the connection's own maximum_bytes_billed. */
  readonly maxBytesBilled?: number
}

/** The gateway's count of a result's bytes while it is read. */
export interface ByteMeter {
  /** Counts bytes about to be held; false when they may not be (the result passed its cap, or the gateway's result memory is spent). */
  readonly take: (bytes: number) => boolean
  /** The most one result may hold, for a reader that counts on its own (in another process) and is metered when its rows arrive. */
  readonly cap: number
}

export interface Column {
  readonly name: string
  readonly type: string
}

export type Row = ReadonlyArray<unknown>

export interface QueryResult {
  readonly columns: ReadonlyArray<Column>
  readonly rows: ReadonlyArray<Row>
  readonly truncated: boolean
  /** Bytes the warehouse says it processed (BigQuery), where it says. */
  readonly bytesScanned?: number
  /** The meter stopped the reading: the rows are incomplete and must not be served. */
  readonly oversized?: boolean
}

/** An open statement read in batches; the scope it was opened in holds its connection. */
export interface RowBatches {
  readonly columns: ReadonlyArray<Column>
  /** The next rows (at most `maxRows + 1` in all, so the caller can tell a truncated result); empty once none are left. */
  readonly next: Effect.Effect<ReadonlyArray<Row>, ConnectorError>
}

/** A warehouse's estimate of a statement without running it (BigQuery's dry run). */
export interface DryRun {
  readonly statementType: string
  readonly bytesProcessed: number
}

export interface PoolStats {
  readonly total: number
  readonly idle: number
  readonly waiting: number
}

/** An open connection pool to one customer database; closed when the scope that opened it closes. */
export interface ConnectorPool {
  /** Runs one read-only statement under the dialect's session guards; a timeout cancels it on the server. */
  readonly query: (sql: string, options: QueryOptions) => Effect.Effect<QueryResult, ConnectorError>
  /** `query` as plain callbacks, where the connector has them: `done` is told once; the function returned gives the statement up as interrupting `query` does. */
  readonly queryNow?: (sql: string, options: QueryOptions, done: (exit: Exit.Exit<QueryResult, ConnectorError>) => void) => () => void
  /** `query` answers within its timeout plus DEADLINE_GRACE_MS itself, even from a database that never answers; otherwise the caller bounds it. */
  readonly answersByDeadline?: true
  /** Opens one read-only statement as a cursor, for results streamed without holding them in memory. */
  readonly stream?: (sql: string, options: QueryOptions) => Effect.Effect<RowBatches, ConnectorError, Scope.Scope>
  /** A cheap round trip that proves the credentials still work. */
  readonly ping: Effect.Effect<void, ConnectorError>
  /** Where the warehouse estimates a statement without running it. */
  readonly dryRun?: (sql: string) => Effect.Effect<DryRun, ConnectorError>
  readonly stats: () => PoolStats
}

export interface Capabilities {
  readonly db_type: DbType
  readonly driver: string
  readonly transport: string
  readonly read_only_guard: string
  readonly server_side_cancel: boolean
  readonly ssh_tunnel: boolean
  readonly tls: boolean
  readonly local_file: boolean
  readonly limit_syntax: "limit" | "top" | "fetch_first"
  /** Whether this build has been run against a real server of this type (see README). */
  readonly verified_against: string
}

export interface Endpoint {
  readonly host: string
  readonly port: number
}

/** Decides whether the gateway may dial an address on a customer connection's behalf (EgressPolicy.ts builds them). */
export interface EgressPolicy {
  /** The addresses the endpoint's host resolves to, each one this gateway may dial; fails on the first it may not. */
  readonly check: (endpoint: Endpoint) => Effect.Effect<ReadonlyArray<LookupAddress>, ConnectorError>
}

/** What a connector is given to open a pool: the connection with its secrets, and where to dial. */
export interface OpenRequest<C extends ConnectionInput = ConnectionInput> {
  readonly connection: C
  /** Where to dial: the connector's `address`, or the local end of an SSH tunnel to it; null for a local file. */
  readonly endpoint: Endpoint | null
  readonly connectTimeoutMs: number
  /** Replaces every secret value in a driver message before it can reach a caller or a log. */
  readonly scrub: (message: string) => string
  /** Resolves only the endpoint's host, to addresses the egress policy allows; every driver dials through it (agents, sockets). */
  readonly lookup?: LookupFunction
  /** The egress policy itself, for drivers that also reach hosts other than the endpoint's (result chunks in cloud storage, token endpoints). */
  readonly egress?: EgressPolicy
}

export interface Connector<C extends ConnectionInput = ConnectionInput> {
  readonly capabilities: Capabilities
  /** The host and port the driver dials (null for a local file); diagnose probes it and an SSH tunnel forwards to it. */
  readonly address: (connection: C) => Endpoint | null
  /** Whether this connection is encrypted whatever its tls field says (HTTPS-only services); diagnose reports it. */
  readonly alwaysTls?: (connection: C) => boolean
  /** A query that lists readable tables, for the diagnose route's privileges step. */
  readonly privilegesProbe: string
  /** Its pool keeps a session open on the server per pooled connection (counted against the server's connection limit). */
  readonly holdsServerSessions?: boolean
  readonly open: (request: OpenRequest<C>) => Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope>
}

/** The statement as sent: the attribution comment, when there is one, on its own line before it. */
export const attributedSql = (sql: string, options: QueryOptions) => (options.attribution ? `${options.attribution}\n${sql}` : sql)

/** Rows per round trip when a result is streamed: big enough to amortize the trip, small enough to keep memory flat. */
export const STREAM_BATCH_ROWS = 2_000

/** A pool without a cursor of its own streams its whole (capped) result as one batch. */
export const batchesOf = (pool: ConnectorPool, sql: string, options: QueryOptions): Effect.Effect<RowBatches, ConnectorError, Scope.Scope> =>
  pool.stream !== undefined
    ? pool.stream(sql, options)
    : Effect.map(pool.query(sql, { ...options, maxRows: options.maxRows + 1 }), (result) => ({ columns: result.columns, next: onceThenEmpty(result.rows) }))

/** A `next` that yields these rows, then nothing. */
export const onceThenEmpty = (rows: ReadonlyArray<Row>): Effect.Effect<ReadonlyArray<Row>> => {
  let pending = rows
  return Effect.sync(() => {
    const batch = pending
    pending = []
    return batch
  })
}

/**
 * Waits for a connection from a driver's own pool, interruptibly: when the wait is abandoned (the
 * caller left, or its deadline passed) a connection the driver hands over later goes straight back.
 */
export const takeFromPool = <C>(
  take: () => Promise<C>,
  giveBack: (connection: C) => void,
  onError: (error: unknown) => ConnectorError
): Effect.Effect<C, ConnectorError> =>
  Effect.async((resume) => {
    let abandoned = false
    let arrived: C | undefined
    take().then(
      (connection) => {
        if (abandoned) return giveBack(connection)
        arrived = connection
        resume(Effect.succeed(connection))
      },
      (error) => abandoned || resume(Effect.fail(onError(error)))
    )
    // Interrupted after the driver answered but before the fiber took the connection: it is given back here.
    return Effect.sync(() => {
      abandoned = true
      if (arrived !== undefined) giveBack(arrived)
    })
  })

/** A lower bound of a row's size as JSON (its values' lengths), cheap enough to keep a running count while reading. */
export const rowBytes = (row: Row): number => {
  let bytes = 0
  for (const value of row) {
    if (value === null || value === undefined) continue
    if (typeof value === "string") bytes += value.length
    else if (value instanceof Uint8Array) bytes += value.length
    else if (typeof value === "object") bytes += JSON.stringify(value)?.length ?? 0
    else bytes += String(value).length
  }
  return bytes
}

/**
 * A buffered read's rows: each counted by the query's meter before it is kept, at most
 * `maxRows + 1` (to tell a truncated result), none once the meter refused one.
 */
export class RowCollector {
  private rows: Array<Row> = []
  private refused = false

  constructor(private readonly options: Pick<QueryOptions, "maxRows" | "meter">) {}

  /** How many more rows the read wants (0 once it should stop). */
  get room(): number {
    return this.refused ? 0 : this.options.maxRows + 1 - this.rows.length
  }

  /** The meter refused a row: the read must stop and its rows are gone. */
  get oversized(): boolean {
    return this.refused
  }

  /** Keeps the row if the meter allows it; false once the read should stop. */
  add(row: Row): boolean {
    if (this.room <= 0) return false
    if (this.options.meter !== undefined && !this.options.meter.take(rowBytes(row))) {
      this.refused = true
      this.rows = []
      return false
    }
    this.rows.push(row)
    return this.room > 0
  }

  result(columns: ReadonlyArray<Column>): QueryResult {
    if (this.refused) return { columns, rows: [], truncated: false, oversized: true }
    const { maxRows } = this.options
    return { columns, rows: this.rows.length > maxRows ? this.rows.slice(0, maxRows) : this.rows, truncated: this.rows.length > maxRows }
  }
}
