import { Context, Duration, Effect, Exit, Option, Stream } from "effect"
import { InvalidRequest } from "../domain/Errors"
import type { Usage } from "../domain/Budget"
import type { Principal } from "../domain/Principal"
import type { OrgSettings } from "../domain/Settings"
import {
  type ExplainRequest,
  QueryFailed,
  type QueryRequest,
  type QueryResponse,
  type QueryStreamPart,
  QueryTimeout,
  ROW_LIMITS,
  STREAMED_ROW_LIMIT,
  STREAMING_HINT,
  type Surface
} from "../domain/Query"
import { runtimeCapOf } from "../governance/ExplainPlan"
import { GovernedExecutor, type GovernedQuery, type GovernedQueryError, type QueryFacts } from "../governance/GovernedExecutor"
import { ResultCache } from "../governance/ResultCache"
import { Budgets } from "./Budgets"
import { Connections } from "./Connections"
import { type RelationPolicy, Schemas } from "./Schemas"
import { Settings } from "./Settings"

interface QueryContext {
  readonly surface: Surface
  /** The rows go out as they are read (REST with Accept: application/x-ndjson). */
  readonly streamed?: boolean
  readonly requestId: string
  readonly report: (facts: QueryFacts) => Effect.Effect<void>
  /** Checks the caller's credential again; a stream that outlives it (a key deleted or expired meanwhile) ends with its error. */
  readonly recheck?: Effect.Effect<unknown, { readonly code: string; readonly message: string }>
}

/** A governed query that is one of several a request runs (samples, explorations, PII detection): each reports its facts with its own SQL. */
export interface ChildQueryContext {
  readonly surface: Surface
  readonly requestId: string
  readonly report: (facts: QueryFacts, sql: string) => Effect.Effect<void>
  readonly session?: string | undefined
}

/**
 * While provided, `run` reads each statement's plan instead of running it (audited as a planned
 * query) and tells `planned` its estimated cost, answering with no rows: what a tool would cost,
 * learned by running the tool itself before it is allowed to read anything.
 */
export class QueryPlanning extends Context.Tag("sluice/QueryPlanning")<
  QueryPlanning,
  { readonly planned: (plan: { readonly sql: string; readonly estimated_usd: number | null }) => Effect.Effect<void> }
>() {}

/**
 * While provided, `run` stops a statement once it has run past what `usd` allows at the engine's
 * list price (BigQuery: the bytes it may bill; elsewhere the time it takes to read that many
 * dollars' worth of rows), says so in its error, and tells `stopped`: an agent's query that was
 * not approved costs no more than the approval threshold, whatever its planner's estimate said.
 */
export class QueryCostCap extends Context.Tag("sluice/QueryCostCap")<QueryCostCap, { readonly usd: number; readonly stopped: Effect.Effect<void> }>() {}

// Keys are cached for 500 ms, so a key deleted anywhere stops its streams within 1.5 s.
const RECHECK_INTERVAL = Duration.seconds(1)

/** Fails when `recheck` does, checking once a `RECHECK_INTERVAL`: a stream interrupted by it ends when its credential does. */
export const credentialLost = (recheck: NonNullable<QueryContext["recheck"]>) =>
  Effect.forever(Effect.delay(recheck, RECHECK_INTERVAL)).pipe(
    Effect.mapError((error) => ({ code: error.code, message: `The stream stopped: ${error.message}` }))
  )

/** The most rows a surface sends: at once, or streamed. */
const maxRowLimitOf = (context: Pick<QueryContext, "surface" | "streamed">) => (context.streamed === true ? STREAMED_ROW_LIMIT : ROW_LIMITS[context.surface].max)

/** The answer of a statement that was planned, not run: no rows. */
const nothingRan = (plan: { readonly query_id: string; readonly tables: QueryResponse["tables"] }): QueryResponse => ({
  query_id: plan.query_id,
  columns: [],
  rows: [],
  row_count: 0,
  completeness: "complete",
  truncated_at: null,
  execution_ms: 0,
  bytes_scanned: null,
  cached: false,
  pii_masked: [],
  tables: plan.tables,
  budget: null
})

/** Governed read-only SQL for REST and MCP callers: resolves the caller's connection and limits, then runs the executor. */
export class Queries extends Effect.Service<Queries>()("sluice/Queries", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections
    const settings = yield* Settings
    const executor = yield* GovernedExecutor
    const cache = yield* ResultCache
    const budgets = yield* Budgets
    const schemas = yield* Schemas

    type Requested = { readonly connection_name: string; readonly sql: string; readonly row_limit?: number; readonly timeout_seconds?: number }
    type Target = Effect.Effect.Success<ReturnType<typeof connections.target>>

    /** The statement on the caller's connection under its limits, its relations' policy decided; the requested row limit refused where it is over the surface's. */
    const governed = (
      principal: Principal,
      request: Requested,
      context: Pick<QueryContext, "surface" | "streamed" | "requestId">,
      target: Target,
      org: OrgSettings,
      policy: RelationPolicy
    ): GovernedQuery => {
      const connection = target.connection
      const maxRowLimit = maxRowLimitOf(context)
      const requested = request.row_limit ?? (context.surface === "mcp" ? org.mcp_default_row_limit : org.default_row_limit)
      const rowLimit = Math.min(requested, maxRowLimit, connection.max_rows ?? Number.MAX_SAFE_INTEGER)
      const timeoutSeconds = request.timeout_seconds ?? Math.min(connection.query_timeout ?? org.query_timeout_seconds, 300)
      return {
        target,
        pii: policy.pii,
        reached: policy.reached,
        masking: policy.masking,
        ...(policy.refusal === undefined ? {} : { refusal: policy.refusal }),
        sql: request.sql,
        rowLimit,
        timeoutMs: timeoutSeconds * 1000,
        attribution: { keyPrefix: principal.keyPrefix, orgId: principal.orgId, requestId: context.requestId }
      }
    }

    /** The refusal of a row limit over what the surface sends at once. */
    const rowLimitRefusal = (request: Requested, context: Pick<QueryContext, "surface" | "streamed">) => {
      const maxRowLimit = maxRowLimitOf(context)
      return request.row_limit !== undefined && request.row_limit > maxRowLimit
        ? new InvalidRequest({ message: `row_limit must be at most ${maxRowLimit}${context.streamed === true ? "" : ` ${STREAMING_HINT}`}` })
        : undefined
    }

    /** The caller's connection and the limits a statement on it runs under. */
    const prepare = (principal: Principal, request: Requested, context: QueryContext) =>
      Effect.gen(function* () {
        const target = yield* connections.target(principal, request.connection_name)
        const org = yield* settings.get(principal)
        const refusal = rowLimitRefusal(request, context)
        if (refusal !== undefined) return yield* refusal
        return governed(principal, request, context, target, org, yield* schemas.policyFor(target, request.sql))
      })

    /** The query under the running cost cap, when one is provided, and its failures with a stop at the cap told apart. */
    const costCapped = (query: GovernedQuery) =>
      Effect.map(Effect.serviceOption(QueryCostCap), (cap) => {
        type Stop = <A, R>(run: Effect.Effect<A, GovernedQueryError, R>) => Effect.Effect<A, GovernedQueryError, R>
        if (Option.isNone(cap)) return { query, stopped: ((run) => run) as Stop }
        const { usd, stopped: told } = cap.value
        const dbType = query.target.connection.db_type
        const limit = runtimeCapOf(dbType, usd)
        const seconds = limit.seconds === undefined ? undefined : Math.max(limit.seconds, 0.05)
        const binding = seconds !== undefined && seconds * 1000 < query.timeoutMs
        const capped: GovernedQuery = {
          ...query,
          ...(binding ? { timeoutMs: Math.ceil(seconds * 1000) } : {}),
          ...(limit.bytes === undefined ? {} : { maxBytesBilled: limit.bytes })
        }
        const over = `over the $${usd} a query may cost without approval`
        const stopped: Stop = (run) =>
          Effect.catchIf(
            run,
            (error) => (binding && error._tag === "QueryTimeout") || (limit.bytes !== undefined && error._tag === "QueryFailed" && /bytes it may bill|bytes billed/i.test(error.message)),
            (error) =>
              Effect.zipRight(
                told,
                Effect.fail(
                  error._tag === "QueryTimeout"
                    ? new QueryTimeout({ message: `The statement was stopped after ${seconds!.toFixed(2)} s: at ${dbType}'s list price, reading longer costs ${over}` })
                    : new QueryFailed({ message: `The statement would bill more than ${limit.bytes} bytes, ${over}` })
                )
              )
          )
        return { query: capped, stopped }
      })

    // Bytes scanned where the warehouse reports them (BigQuery); no connector reports credits, so cost is rows × columns.
    const usageOf = (
      outcome: { readonly row_count: number; readonly cached: boolean; readonly bytes_scanned: number | null; readonly execution_ms: number },
      columns: number
    ): Usage => ({
      queries: 1,
      rows: outcome.row_count,
      bytes_scanned: outcome.cached ? 0 : (outcome.bytes_scanned ?? 0),
      cost: outcome.row_count * columns,
      duration_ms: outcome.execution_ms
    })

    /** The executor's audit sink, keeping the last facts so the budget charge can be added to them. */
    const factsOf = (context: QueryContext) => {
      let last: QueryFacts | undefined
      return {
        report: (facts: QueryFacts) => Effect.zipRight(Effect.sync(() => (last = facts)), context.report(facts)),
        charged: (budget: { readonly id: string } | null, usage: Usage) =>
          budget !== null && last !== undefined ? context.report({ ...last, budget: { id: budget.id, charged: usage } }) : Effect.void
      }
    }

    /**
     * Runs the statement under the caller's budgets (what it did not spend is given back when it
     * ends). The result's share of the result memory and the pool's reference are held in the
     * caller's scope: for a request, until its response has been written.
     */
    const run = (principal: Principal, request: QueryRequest, context: QueryContext) =>
      Effect.gen(function* () {
        const query = yield* prepare(principal, request, context)
        const planning = yield* Effect.serviceOption(QueryPlanning)
        if (Option.isSome(planning)) {
          const plan = yield* executor.explain(query, context.report)
          yield* planning.value.planned({ sql: query.sql, estimated_usd: plan.estimated_usd })
          return nothingRan(plan)
        }
        const capped = yield* costCapped(query)
        return yield* budgets.withReservation(principal, request.session, query.rowLimit, (reservation) =>
          Effect.gen(function* () {
            const facts = factsOf(context)
            const outcome = yield* executor.run({ ...capped.query, rowLimit: reservation.rowCap }, facts.report).pipe(capped.stopped)
            const usage = usageOf(outcome, outcome.columns.length)
            const budget = yield* reservation.settle(usage)
            yield* facts.charged(budget, usage)
            return { ...outcome, budget }
          })
        )
      })

    /**
     * `run` as plain callbacks, for a caller that plans nothing and caps no cost (a REST request),
     * where everything it needs is in this replica's memory and no budget applies: `done` is told how
     * it ends, with the function that gives the result's memory back once the answer is written. Undefined, with nothing done or reported, where only `run` can; else the function that
     * gives the statement up (its caller gone).
     */
    const runNow = (
      principal: Principal,
      request: QueryRequest,
      context: Pick<QueryContext, "surface" | "requestId"> & { readonly report: (facts: QueryFacts) => void },
      done: (exit: Exit.Exit<QueryResponse, GovernedQueryError>, release: () => void) => void
    ): (() => void) | undefined => {
      const target = connections.targetNow(principal, request.connection_name)
      const org = target === undefined ? undefined : settings.getNow(principal)
      if (target === undefined || org === undefined || !budgets.noneAppliesNow(principal, request.session)) return undefined
      const refusal = rowLimitRefusal(request, context)
      if (refusal !== undefined) {
        done(Exit.fail(refusal), () => {})
        return () => {}
      }
      const policy = schemas.policyNow(target, request.sql)
      if (policy === undefined) return undefined
      return executor.runNow(governed(principal, request, context, target, org, policy), context.report, (exit, release) => done(Exit.map(exit, (outcome) => ({ ...outcome, budget: null })), release))
    }

    /** `run` for one of a request's several queries, at most `rowLimit` rows, audited under the request with its own SQL. */
    const runChild = (principal: Principal, connectionName: string, sql: string, rowLimit: number, context: ChildQueryContext) =>
      run(
        principal,
        { connection_name: connectionName, sql, row_limit: rowLimit, ...(context.session === undefined ? {} : { session: context.session }) },
        { surface: context.surface, requestId: context.requestId, report: (facts) => context.report(facts, sql) }
      )

    /**
     * `run` with the rows sent as they are read. Refusals and a statement that fails before its
     * first row are errors as usual; a later failure becomes the stream's last part.
     */
    const stream = Effect.fnUntraced(function* (principal: Principal, request: QueryRequest, context: QueryContext) {
      const query = yield* prepare(principal, request, { ...context, streamed: true })
      const reservation = yield* budgets.reserve(principal, request.session, query.rowLimit)
      const facts = factsOf(context)
      const streamed = yield* executor.stream({ ...query, rowLimit: reservation.rowCap }, facts.report)
      // Charged once, for the rows sent, however the stream ends: a client that leaves early still pays.
      const charge = yield* Effect.cached(
        Effect.suspend(() => {
          const usage = usageOf({ ...streamed.tail(), cached: streamed.head.cached }, streamed.head.columns.length)
          return Effect.tap(reservation.settle(usage), (budget) => facts.charged(budget, usage))
        })
      )
      const sent = Stream.concat(
        Stream.succeed({ type: "head" as const, ...streamed.head }),
        Stream.map(streamed.rows, (rows) => ({ type: "rows" as const, rows }))
      )
      const parts: Stream.Stream<QueryStreamPart, { readonly code: string; readonly message: string }> = Stream.concat(
        context.recheck === undefined ? sent : Stream.interruptWhen(sent, credentialLost(context.recheck)),
        Stream.fromEffect(Effect.map(charge, (budget) => ({ type: "end" as const, ...streamed.tail(), budget })))
      )
      return parts.pipe(
        Stream.catchAll((error) =>
          Stream.fromEffect(Effect.as(Effect.ignore(charge), { type: "error", code: error.code, message: error.message } as const))
        ),
        Stream.ensuring(Effect.ignore(charge))
      )
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

    return { run, runNow, runChild, stream, explain, cacheStats, invalidateCache } as const
  }),
  dependencies: [GovernedExecutor.Default, ResultCache.Default, Budgets.Default, Connections.Default, Schemas.Default, Settings.Default]
}) {}
