import { Schema } from "effect"
import { Budget, SessionName } from "./Budget"
import { ConnectionName } from "./Connection"
import { ApiError, Conflict, InvalidRequest, NotFound, Unavailable } from "./Errors"
import { noNul } from "./Text"

export const MAX_SQL_CHARS = 100_000

/** Row caps per surface: REST callers page through more than an assistant's context can hold. */
export const ROW_LIMITS = {
  rest: { max: 100_000 },
  mcp: { max: 10_000 }
} as const
export type Surface = keyof typeof ROW_LIMITS
/** A streamed result is never held whole, so it may be ten times longer than a buffered one. */
export const STREAMED_ROW_LIMIT = 1_000_000
export const NDJSON = "application/x-ndjson"
/** How to get past the buffered row limit, for the messages that refuse a larger one. */
export const STREAMING_HINT = `(${STREAMED_ROW_LIMIT} when the result is streamed with Accept: ${NDJSON})`
const rowLimitMessage = `row_limit must be an integer between 1 and ${ROW_LIMITS.rest.max} ${STREAMING_HINT}`

const Sql = Schema.String.pipe(
  Schema.filter((sql) => sql.trim().length > 0 || "sql must not be empty"),
  Schema.maxLength(MAX_SQL_CHARS, { message: () => `sql must be at most ${MAX_SQL_CHARS} characters` }),
  noNul("sql")
)

/** `row_limit` is checked against its surface's bound in the service; the schema knows only the widest. */
export const QueryRequest = Schema.Struct({
  connection_name: ConnectionName,
  sql: Sql,
  row_limit: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, STREAMED_ROW_LIMIT, { message: () => rowLimitMessage })),
    { exact: true }
  ),
  timeout_seconds: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, 300, { message: () => "timeout_seconds must be an integer between 1 and 300" })).annotations({
      description: "Cancel the statement after this many seconds (default: the connection's query timeout)"
    }),
    { exact: true }
  ),
  /** Names the session budget this query draws from (besides any budget of the key). */
  session: Schema.optionalWith(SessionName, { exact: true })
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type QueryRequest = typeof QueryRequest.Type

export const ResultColumn = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  nullable: Schema.NullOr(Schema.Boolean)
})

export const Completeness = Schema.Literal("complete", "truncated")

export const QueryResponse = Schema.Struct({
  query_id: Schema.String,
  columns: Schema.Array(ResultColumn),
  rows: Schema.Array(Schema.Array(Schema.Unknown)),
  row_count: Schema.Int,
  completeness: Completeness,
  truncated_at: Schema.NullOr(Schema.Int),
  execution_ms: Schema.Number,
  /** Bytes the warehouse reports it processed (BigQuery); null where it reports none. */
  bytes_scanned: Schema.NullOr(Schema.Number),
  cached: Schema.Boolean,
  pii_masked: Schema.Array(Schema.Struct({ column: Schema.String, rule: Schema.String })),
  tables: Schema.Array(Schema.String),
  /** The budget this query was charged to, as it now stands (null when none applies). */
  budget: Schema.NullOr(Budget)
})
export type QueryResponse = typeof QueryResponse.Type

/**
 * The parts of a streamed result, one NDJSON line each (a `rows` part is a line per row, each a
 * JSON array): the head, the rows, then `end`, or `error` when the statement fails after its first row.
 */
export type QueryStreamPart =
  | ({ readonly type: "head" } & Pick<QueryResponse, "query_id" | "columns" | "cached" | "pii_masked" | "tables">)
  | { readonly type: "rows"; readonly rows: ReadonlyArray<ReadonlyArray<unknown>> }
  | ({ readonly type: "end" } & Pick<QueryResponse, "row_count" | "completeness" | "truncated_at" | "execution_ms" | "bytes_scanned" | "budget">)
  | { readonly type: "error"; readonly code: string; readonly message: string }

/** The read-only check or the table policy refused the statement; `reason` says which rule. */
export class QueryBlocked extends ApiError<QueryBlocked>()(
  "QueryBlocked",
  { code: "query_blocked", status: 400 },
  { reason: Schema.String }
) {}

/** The database refused or failed the statement (a missing table, a type error…); the message is sanitized. */
export class QueryFailed extends ApiError<QueryFailed>()("QueryFailed", { code: "query_failed", status: 400 }) {}

export class QueryTimeout extends ApiError<QueryTimeout>()("QueryTimeout", { code: "query_timeout", status: 504 }) {}

/** The connection could not be opened (network, TLS, credentials). */
export class DatabaseUnavailable extends ApiError<DatabaseUnavailable>()(
  "DatabaseUnavailable",
  { code: "database_unavailable", status: 502 },
  { step: Schema.String }
) {}

export class ResultTooLarge extends ApiError<ResultTooLarge>()("ResultTooLarge", { code: "result_too_large", status: 422 }) {}

/** The memory the gateway gives buffered results is in use; `retry_after_seconds` says when to try again. */
export class ResultMemoryExhausted extends ApiError<ResultMemoryExhausted>()(
  "ResultMemoryExhausted",
  { code: "result_memory_exhausted", status: 503 },
  { retry_after_seconds: Schema.Int }
) {}

export const CacheStats = Schema.Struct({
  entries: Schema.Int,
  bytes: Schema.Int,
  hits: Schema.Int,
  misses: Schema.Int,
  evictions: Schema.Int,
  hit_rate: Schema.Number,
  max_bytes_per_replica: Schema.Int
})

export const CacheInvalidation = Schema.Struct({ connection_name: Schema.optionalWith(ConnectionName, { exact: true }) }).annotations({
  parseOptions: { onExcessProperty: "error" }
})

export const ExplainRequest = Schema.Struct({
  connection_name: ConnectionName,
  sql: Sql,
  /** The cap the plan is for, as POST /api/query would apply it. */
  row_limit: QueryRequest.fields.row_limit,
  timeout_seconds: QueryRequest.fields.timeout_seconds
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type ExplainRequest = typeof ExplainRequest.Type

export const ExplainResponse = Schema.Struct({
  query_id: Schema.String,
  /** The engine's plan: its JSON where it gives one (PostgreSQL, MySQL), else its lines of text. */
  plan: Schema.Unknown,
  estimated_rows: Schema.NullOr(Schema.Number),
  estimated_cost: Schema.NullOr(Schema.Number),
  /** Bytes the warehouse would scan (BigQuery's dry run), where it says. */
  estimated_bytes: Schema.NullOr(Schema.Number),
  /** Rows the plan reads from tables, where the engine's plan states them. */
  scanned_rows: Schema.NullOr(Schema.Number),
  /** A rough US-dollar guess (rows scanned at the engine's list price; BigQuery: bytes at on-demand price); 0 for engines on the customer's machines. */
  estimated_usd: Schema.NullOr(Schema.Number),
  warnings: Schema.Array(Schema.String),
  tables: Schema.Array(Schema.String),
  /** The statement the plan is for: as checked and row-capped, as POST /api/query would run it. */
  sql: Schema.String
})

/** What a governed statement can fail with, for every endpoint that runs one. */
export const GovernedQueryErrors = Schema.Union(
  InvalidRequest,
  NotFound,
  Conflict,
  Unavailable,
  QueryBlocked,
  QueryFailed,
  QueryTimeout,
  DatabaseUnavailable,
  ResultTooLarge,
  ResultMemoryExhausted
)
