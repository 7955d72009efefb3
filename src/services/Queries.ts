import { Effect } from "effect"
import type { Principal } from "../domain/Principal"
import { type ExplainRequest, type QueryRequest, ROW_LIMITS, type Surface } from "../domain/Query"
import { GovernedExecutor, type QueryFacts } from "../governance/GovernedExecutor"
import { ResultCache } from "../governance/ResultCache"
import { Budgets } from "./Budgets"
import { Connections } from "./Connections"
import { Settings } from "./Settings"

interface QueryContext {
  readonly surface: Surface
  readonly requestId: string
  readonly report: (facts: QueryFacts) => Effect.Effect<void>
}

/** Governed read-only SQL for REST and MCP callers: resolves the caller's connection and limits, then runs the executor. */
export class Queries extends Effect.Service<Queries>()("sluice/Queries", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections
    const settings = yield* Settings
    const executor = yield* GovernedExecutor
    const cache = yield* ResultCache
    const budgets = yield* Budgets

    /** The caller's connection and the limits a statement on it runs under. */
    const prepare = (
      principal: Principal,
      request: { readonly connection_name: string; readonly sql: string; readonly row_limit?: number; readonly timeout_seconds?: number },
      context: QueryContext
    ) =>
      Effect.gen(function* () {
        const target = yield* connections.target(principal, request.connection_name)
        const org = yield* settings.get(principal)
        const connection = target.connection
        const requested = request.row_limit ?? (context.surface === "mcp" ? org.mcp_default_row_limit : org.default_row_limit)
        const rowLimit = Math.min(requested, ROW_LIMITS[context.surface].max, connection.max_rows ?? Number.MAX_SAFE_INTEGER)
        const timeoutSeconds = request.timeout_seconds ?? Math.min(connection.query_timeout ?? org.query_timeout_seconds, 300)
        return {
          target,
          pii: target.pii,
          sql: request.sql,
          rowLimit,
          timeoutMs: timeoutSeconds * 1000,
          attribution: { keyPrefix: principal.keyPrefix, orgId: principal.orgId, requestId: context.requestId }
        }
      })

    // Untraced: on the per-query path a span per call is measurable CPU (bench/README.md).
    const run = Effect.fnUntraced(function* (principal: Principal, request: QueryRequest, context: QueryContext) {
      const query = yield* prepare(principal, request, context)
      const reserved = yield* budgets.reserve(principal, request.session)
      let facts: QueryFacts | undefined
      const outcome = yield* executor.run(query, (f) => Effect.zipRight(Effect.sync(() => (facts = f)), context.report(f)))
      // Bytes scanned where the warehouse reports them (BigQuery); no connector reports credits, so cost is rows × columns.
      const usage = {
        queries: 1,
        rows: outcome.row_count,
        bytes_scanned: outcome.cached ? 0 : (outcome.bytes_scanned ?? 0),
        cost: outcome.row_count * outcome.columns.length,
        duration_ms: outcome.execution_ms
      }
      const budget = yield* budgets.charge(principal, reserved, usage)
      if (budget !== null && facts !== undefined) yield* context.report({ ...facts, budget: { id: budget.id, charged: usage } })
      return { ...outcome, budget }
    })

    const explain = Effect.fnUntraced(function* (principal: Principal, request: ExplainRequest, context: QueryContext) {
      return yield* executor.explain(yield* prepare(principal, request, context), context.report)
    })

    const cacheStats = (principal: Principal) => cache.stats(principal.orgId)

    /** Drops the org's cached results, or one connection's. */
    const invalidateCache = Effect.fn("Queries.invalidateCache")(function* (principal: Principal, connectionName: string | undefined) {
      const connectionId = connectionName === undefined ? undefined : (yield* connections.target(principal, connectionName)).connectionId
      return { invalidated: yield* cache.invalidate(principal.orgId, connectionId) }
    })

    return { run, explain, cacheStats, invalidateCache } as const
  }),
  dependencies: [GovernedExecutor.Default, ResultCache.Default, Budgets.Default]
}) {}
