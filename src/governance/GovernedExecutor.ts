import { randomUUID } from "node:crypto"
import { Duration, Effect, Either } from "effect"
import type { ConnectorError, QueryResult } from "../../layers/connectors/Connector"
import { ConnectorPools, type PoolTarget } from "../../layers/connectors/ConnectorPools"
import { CredentialCipher } from "../../layers/CredentialCipher"
import type { Usage } from "../domain/Budget"
import { InvalidRequest } from "../domain/Errors"
import type { PiiPolicy } from "../domain/Pii"
import { DatabaseUnavailable, QueryBlocked, QueryFailed, type QueryResponse, QueryTimeout, ResultTooLarge } from "../domain/Query"
import { type Attribution, attributionComment } from "./Attribution"
import { dryRunSummary, explainStatement, type PlanSummary, summarizePlan } from "./ExplainPlan"
import { maskResult } from "./PiiMasking"
import { type CachedResult, ResultCache } from "./ResultCache"
import { capRows } from "./RowCap"
import { SqlGuard } from "./sqlguard/SqlGuard"
import { tablePolicyRefusal } from "./TablePolicy"

const MAX_RESULT_BYTES = 10 * 1024 * 1024
// The connector cancels at the deadline on the server; this is the backstop if a driver never answers.
const DEADLINE_GRACE = Duration.seconds(2)

export interface GovernedQuery {
  readonly target: PoolTarget
  readonly pii: PiiPolicy
  readonly sql: string
  readonly rowLimit: number
  readonly timeoutMs: number
  readonly attribution: Attribution
}

/** What the audit row of a governed query records beyond the request itself. */
export interface QueryFacts {
  readonly query_id: string
  readonly tables: ReadonlyArray<string>
  readonly reason?: string
  readonly completeness?: QueryResponse["completeness"]
  readonly cached?: boolean
  readonly pii_masked?: QueryResponse["pii_masked"]
  readonly rows?: number
  readonly columns?: number
  readonly execution_ms?: number
  /** The budget charged and by how much. */
  readonly budget?: { readonly id: string; readonly charged: Usage }
}

export type GovernedQueryError = QueryBlocked | QueryFailed | QueryTimeout | DatabaseUnavailable | ResultTooLarge | InvalidRequest

const fromConnector = (error: ConnectorError): GovernedQueryError => {
  switch (error.step) {
    case "timeout":
      return new QueryTimeout({ message: error.message })
    case "query":
    case "privileges":
      return new QueryFailed({ message: error.message })
    default:
      return new DatabaseUnavailable({ message: error.message, step: error.step })
  }
}

/** UTF-8 size of the rows as JSON, or undefined as soon as it passes the cap. */
const resultBytes = (result: QueryResult) => {
  let bytes = 0
  for (const row of result.rows) {
    bytes += Buffer.byteLength(JSON.stringify(row))
    if (bytes > MAX_RESULT_BYTES) return undefined
  }
  return bytes
}

/**
 * The one governed executor: every path that returns customer data runs through `run`. Read-only
 * check, table policy, row cap with an exact truncation signal, the connection's result cache,
 * execution with session guards and a server-side cancel at the deadline, PII masking by column
 * lineage, result size cap; `explain`
 * shows the plan of the same statement. `report` receives the audit facts of every outcome.
 */
export class GovernedExecutor extends Effect.Service<GovernedExecutor>()("sluice/GovernedExecutor", {
  effect: Effect.gen(function* () {
    const guard = yield* SqlGuard
    const pools = yield* ConnectorPools
    const cache = yield* ResultCache
    const cipher = yield* CredentialCipher

    /** Check, table policy and row cap: what every use of customer SQL passes before it reaches a database. */
    const admit = (query: GovernedQuery, queryId: string, report: (facts: QueryFacts) => Effect.Effect<void>) =>
      Effect.gen(function* () {
        const connection = query.target.connection
        const refuse = (reason: string, tables: ReadonlyArray<string>) =>
          Effect.zipRight(
            report({ query_id: queryId, tables, reason }),
            Effect.fail(new QueryBlocked({ message: `The query was refused: ${reason}`, reason }))
          )
        const checked = guard.check(query.sql, connection.db_type)
        if (Either.isLeft(checked)) return yield* refuse(checked.left.reason, [])
        const tables = [...new Set(checked.right.analysis.tables.map((t) => t.parts.join(".")))]
        const policy = tablePolicyRefusal(checked.right.analysis.tables, connection)
        if (policy !== undefined) return yield* refuse(policy, tables)
        const capped = capRows(checked.right, query.rowLimit, (sql) => guard.check(sql, connection.db_type))
        return { capped, tables }
      })

    /** Runs SQL on the target's pool under the query's deadline, cancelled on the server when it passes. */
    const execute = (query: GovernedQuery, sql: string, maxRows: number) =>
      pools
        .withPool(query.target, (pool) =>
          pool.query(sql, { timeoutMs: query.timeoutMs, maxRows, attribution: attributionComment(query.attribution) })
        )
        .pipe(
          Effect.mapError(fromConnector),
          Effect.timeoutFail({
            duration: Duration.sum(Duration.millis(query.timeoutMs), DEADLINE_GRACE),
            onTimeout: () => new QueryTimeout({ message: "The statement was cancelled because it ran past its timeout" })
          })
        )

    // Untraced: on the per-query path a span per call is measurable CPU (bench/README.md).
    const run = Effect.fnUntraced(function* (
      query: GovernedQuery,
      report: (facts: QueryFacts) => Effect.Effect<void>
    ) {
      const queryId = randomUUID()
      const connection = query.target.connection
      const { capped, tables } = yield* admit(query, queryId, report)
      const ttlSeconds = connection.result_cache_ttl ?? 0
      const cacheKey = {
        orgId: query.target.orgId,
        connectionId: query.target.connectionId,
        connectionVersion: query.target.version,
        piiVersion: query.pii.version,
        rowLimit: query.rowLimit,
        sql: capped.sql
      }
      const started = performance.now()
      const hit = ttlSeconds > 0 ? cache.get(cacheKey) : undefined
      let result: CachedResult
      if (hit !== undefined) result = hit
      else {
        const raw = yield* execute(query, capped.sql, query.rowLimit).pipe(Effect.tapError(() => report({ query_id: queryId, tables })))
        const hashKey = query.pii.rules.some((r) => r.action === "hash") ? cipher.orgSecret("pii-hash", query.target.orgId) : Buffer.alloc(0)
        const masked = maskResult(raw, capped, query.pii.rules, connection, hashKey)
        result = { ...masked.result, masked: masked.masked }
      }
      const executionMs = Number((performance.now() - started).toFixed(3))
      const bytes = resultBytes(result)
      if (bytes === undefined) {
        yield* report({ query_id: queryId, tables, rows: result.rows.length })
        return yield* new ResultTooLarge({
          message: `The result is larger than ${MAX_RESULT_BYTES / 1024 / 1024} MiB; select fewer columns or lower row_limit`
        })
      }
      if (ttlSeconds > 0 && hit === undefined) cache.set(cacheKey, result, bytes, ttlSeconds * 1000)
      const cached = hit !== undefined
      const completeness = result.truncated ? "truncated" : "complete"
      yield* report({
        query_id: queryId,
        tables,
        completeness,
        cached,
        pii_masked: result.masked,
        rows: result.rows.length,
        columns: result.columns.length,
        execution_ms: executionMs
      })
      return {
        query_id: queryId,
        columns: result.columns.map((c) => ({ name: c.name, type: c.type, nullable: null })),
        rows: result.rows,
        row_count: result.rows.length,
        completeness,
        truncated_at: result.truncated ? query.rowLimit : null,
        execution_ms: executionMs,
        bytes_scanned: result.bytesScanned ?? null,
        cached,
        pii_masked: result.masked,
        tables
      } satisfies Omit<QueryResponse, "budget">
    })

    /** The plan of what `run` would execute, from the engine's own EXPLAIN; nothing runs. */
    const explain = Effect.fnUntraced(function* (
      query: GovernedQuery,
      report: (facts: QueryFacts) => Effect.Effect<void>
    ) {
      const queryId = randomUUID()
      const dbType = query.target.connection.db_type
      const { capped, tables } = yield* admit(query, queryId, report)
      const statement = explainStatement(dbType, capped.sql)
      const failed = () => report({ query_id: queryId, tables })
      if (capped.analysis.kind !== "query") {
        yield* failed()
        return yield* new InvalidRequest({ message: "Only a query has a plan to explain" })
      }
      const summary =
        statement !== undefined
          ? summarizePlan(dbType, yield* execute(query, statement, 10_000).pipe(Effect.tapError(failed)))
          : yield* pools
              .withPool(query.target, (pool): Effect.Effect<PlanSummary, InvalidRequest | ConnectorError> =>
                pool.dryRun === undefined
                  ? Effect.fail(new InvalidRequest({ message: `EXPLAIN is not available for ${dbType} connections in this build` }))
                  : Effect.map(pool.dryRun(capped.sql), dryRunSummary)
              )
              .pipe(
                Effect.catchTag("ConnectorError", (error) => Effect.fail(fromConnector(error))),
                Effect.tapError(failed)
              )
      yield* report({ query_id: queryId, tables })
      return { query_id: queryId, ...summary, tables, sql: capped.sql }
    })

    return { run, explain } as const
  }),
  dependencies: [SqlGuard.Default, ResultCache.Default]
}) {}
