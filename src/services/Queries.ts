import { Effect } from "effect"
import type { Principal } from "../domain/Principal"
import { type QueryRequest, ROW_LIMITS, type Surface } from "../domain/Query"
import { GovernedExecutor, type QueryFacts } from "../governance/GovernedExecutor"
import { ResultCache } from "../governance/ResultCache"
import { Budgets } from "./Budgets"
import { Connections } from "./Connections"
import { Settings } from "./Settings"

/** Governed read-only SQL for REST and MCP callers: resolves the caller's connection and limits, then runs the executor. */
export class Queries extends Effect.Service<Queries>()("sluice/Queries", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections
    const settings = yield* Settings
    const executor = yield* GovernedExecutor
    const cache = yield* ResultCache
    const budgets = yield* Budgets

    const run = Effect.fn("Queries.run")(function* (
      principal: Principal,
      request: QueryRequest,
      context: { readonly surface: Surface; readonly requestId: string; readonly report: (facts: QueryFacts) => Effect.Effect<void> }
    ) {
      const target = yield* connections.target(principal, request.connection_name)
      const org = yield* settings.get(principal)
      const connection = target.connection
      const requested = request.row_limit ?? (context.surface === "mcp" ? org.mcp_default_row_limit : org.default_row_limit)
      const rowLimit = Math.min(requested, ROW_LIMITS[context.surface].max, connection.max_rows ?? Number.MAX_SAFE_INTEGER)
      const timeoutSeconds = request.timeout_seconds ?? Math.min(connection.query_timeout ?? org.query_timeout_seconds, 300)
      const reserved = yield* budgets.reserve(principal, request.session)
      let facts: QueryFacts | undefined
      const outcome = yield* executor.run(
        {
          target,
          sql: request.sql,
          rowLimit,
          timeoutMs: timeoutSeconds * 1000,
          attribution: { keyPrefix: principal.keyPrefix, orgId: principal.orgId, requestId: context.requestId }
        },
        (f) => Effect.zipRight(Effect.sync(() => (facts = f)), context.report(f))
      )
      // Native figures (bytes billed, credits) where a connector reports them; otherwise rows × columns.
      const usage = {
        queries: 1,
        rows: outcome.row_count,
        bytes_scanned: 0,
        cost: outcome.row_count * outcome.columns.length,
        duration_ms: outcome.execution_ms
      }
      const budget = yield* budgets.charge(principal, reserved, usage)
      if (budget !== null && facts !== undefined) yield* context.report({ ...facts, budget: { id: budget.id, charged: usage } })
      return { ...outcome, budget }
    })

    const cacheStats = (principal: Principal) => cache.stats(principal.orgId)

    /** Drops the org's cached results, or one connection's. */
    const invalidateCache = Effect.fn("Queries.invalidateCache")(function* (principal: Principal, connectionName: string | undefined) {
      const connectionId = connectionName === undefined ? undefined : (yield* connections.target(principal, connectionName)).connectionId
      return { invalidated: yield* cache.invalidate(principal.orgId, connectionId) }
    })

    return { run, cacheStats, invalidateCache } as const
  }),
  dependencies: [GovernedExecutor.Default, ResultCache.Default, Budgets.Default]
}) {}
