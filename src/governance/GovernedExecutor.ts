import { randomUUID } from "node:crypto"
import { Cause, Effect, Either, Exit, Option, Stream } from "effect"
import { batchesOf, type ConnectorError, DEADLINE_GRACE_MS, onceThenEmpty, type QueryResult, type Row } from "../../layers/connectors/Connector"
import { ConnectorPools, type PoolTarget } from "../../layers/connectors/ConnectorPools"
import { CredentialCipher } from "../../layers/CredentialCipher"
import { type Refusal, type ResultHold, ResultMemory } from "../../layers/ResultMemory"
import type { Usage } from "../domain/Budget"
import { InvalidRequest } from "../domain/Errors"
import type { PiiPolicy } from "../domain/Pii"
import {
  DatabaseUnavailable,
  NDJSON,
  QueryBlocked,
  QueryFailed,
  type QueryResponse,
  type QueryStreamPart,
  QueryTimeout,
  ResultMemoryExhausted,
  ResultTooLarge
} from "../domain/Query"
import { type Attribution, attributionComment } from "./Attribution"
import { dryRunSummary, explainStatement, type PlanSummary, planShape, summarizePlan } from "./ExplainPlan"
import { type HashPads, hashPadsOf, PLAN_PADS, withoutKey } from "./MaskExpressions"
import { maskPlan, maskResult } from "./PiiMasking"
import { type CachedResult, ResultCache } from "./ResultCache"
import { capRows } from "./RowCap"
import { type MaskingCatalog, maskedAtSource } from "./SourceMasking"
import { Refusal as GuardRefusal } from "./sqlguard/Analysis"
import { SqlGuard } from "./sqlguard/SqlGuard"
import { type ReachedBlocks, tablePolicyRefusal } from "./TablePolicy"

const MAX_RESULT_BYTES = 10 * 1024 * 1024
// How long a result waits in line for result memory before it is refused, and when to try again.
const MEMORY_WAIT_MS = 2_000
const MEMORY_RETRY_AFTER_SECONDS = 1

export interface GovernedQuery {
  readonly target: PoolTarget
  readonly pii: PiiPolicy
  /** Relations that read a blocked table (views over it, its partitions and children), from the connection's snapshot. */
  readonly reached: ReachedBlocks
  /** The connection's relations and the PII actions on their columns, for masking at the source. */
  readonly masking: MaskingCatalog
  /** Why the statement may not run whatever it is: the relations it reads could not be told from what the snapshot says. */
  readonly refusal?: string
  readonly sql: string
  readonly rowLimit: number
  readonly timeoutMs: number
  /** BigQuery: the most the statement may bill, below the connection's own limit. */
  readonly maxBytesBilled?: number
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
  /** Only the statement's plan was read, and it was: nothing ran, so there is no completeness to report. */
  readonly planned?: boolean
  /** The rows were streamed to the caller as they were read (no size cap, not cached). */
  readonly streamed?: boolean
  /** The budget charged and by how much. */
  readonly budget?: { readonly id: string; readonly charged: Usage }
}

export type StreamedHead = Omit<Extract<QueryStreamPart, { type: "head" }>, "type">
export type StreamedTail = Omit<Extract<QueryStreamPart, { type: "end" }>, "type" | "budget">

export interface StreamedQuery {
  readonly head: StreamedHead
  /** The rows in batches, masked, up to the row cap; the statement stays open in the caller's scope until they end. */
  readonly rows: Stream.Stream<ReadonlyArray<Row>, GovernedQueryError>
  /** Known once `rows` has ended. */
  readonly tail: () => StreamedTail
}

export type GovernedQueryError = QueryBlocked | QueryFailed | QueryTimeout | DatabaseUnavailable | ResultTooLarge | ResultMemoryExhausted | InvalidRequest

/** A connector failure as the caller sees it: a timeout, a failed statement, or an unreachable database. */
export const fromConnector = (error: ConnectorError): QueryTimeout | QueryFailed | DatabaseUnavailable => {
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

/** When a query's last connector step must have answered: its timeout, plus the grace the server-side cancel gets. */
const deadlineOf = (query: GovernedQuery) => Date.now() + query.timeoutMs + DEADLINE_GRACE_MS

// Masked at the source, a statement computes with raw values only inside a view that does, whose message can quote one (`invalid input syntax for type integer: "ada@…"`).
const WITHHELD = "The database refused the statement; its message is withheld because the statement reads a view that computes with PII values"

// The database stops at the first row whose value it cannot compute, in the order it reads rows, which can follow a masked value.
const DATA_BY_KIND =
  "The database could not compute a value of some row (a cast, a division, a number or date out of range, malformed JSON); over tables with PII rules Sluice does not say which value, since the row the database meets first can follow a masked one"

// Over PII a result is ordered by every column (RowOrder): a type with no ordering fails there, where the caller wrote no ORDER BY.
const UNORDERED_TYPE = /could not identify an ordering operator for type/

/**
 * How a database's message about the statement that ran reaches the caller: as it is, without the
 * hash key, or withheld. `overPii`: the statement reads relations with PII rules, so a value that
 * failed is told by its kind only, and a failed ordering says why Sluice ordered.
 */
export interface Messages {
  readonly withhold: boolean
  readonly scrub: ((text: string) => string) | undefined
  readonly overPii: boolean
}
const AS_IS: Messages = { withhold: false, scrub: undefined, overPii: false }

const failureOf = (error: ConnectorError, messages: Messages) => {
  const failure = fromConnector(error)
  if (failure._tag !== "QueryFailed") return failure
  if (messages.withhold) return new QueryFailed({ message: WITHHELD })
  if (messages.overPii && error.data === true) return new QueryFailed({ message: DATA_BY_KIND })
  const message = messages.scrub === undefined ? failure.message : messages.scrub(failure.message)
  return new QueryFailed({
    message: messages.overPii && UNORDERED_TYPE.test(message) ? `${message}. Sluice orders a result over tables with PII rules by every column, so the order rows come in says nothing of masked values: cast this column (::text, ::jsonb)` : message
  })
}

/** A connector step that fails as the query's own errors, and at the deadline at the latest. */
const beforeDeadline =
  (deadline: number, messages: Messages) =>
  <A, R>(effect: Effect.Effect<A, ConnectorError, R>) =>
    // What is left is measured when the step runs: a stream's later reads get less time, not the same again.
    Effect.suspend(() =>
      effect.pipe(
        Effect.mapError((error) => failureOf(error, messages)),
        // What an interrupted step still does (a cancel dialling a stalled host, a session reset, a pool that was opening) goes on in the background.
        Effect.disconnect,
        Effect.timeoutFail({
          duration: Math.max(0, deadline - Date.now()),
          onTimeout: () => new QueryTimeout({ message: "The statement was cancelled because it ran past its timeout" })
        })
      )
    )

/** A plan of a rewritten statement without the hash key its expressions hold. */
const scrubbed = (plan: QueryResult, messages: Messages): QueryResult => {
  const scrub = messages.scrub
  return scrub === undefined ? plan : { ...plan, rows: plan.rows.map((row) => row.map((value) => (typeof value === "string" ? scrub(value) : value === null || typeof value !== "object" ? value : JSON.parse(scrub(JSON.stringify(value)))))) }
}

/** UTF-8 size of the rows as JSON, or undefined as soon as it passes the cap. */
const resultBytes = (result: Pick<QueryResult, "rows">) => {
  let bytes = 0
  for (const row of result.rows) {
    bytes += Buffer.byteLength(JSON.stringify(row))
    if (bytes > MAX_RESULT_BYTES) return undefined
  }
  return bytes
}

const mib = (bytes: number) => Math.round(bytes / 1024 / 1024)

/** Why a result was refused: over its cap (asking for less helps), or no result memory free (waiting helps). */
const refusalOf = (refusal: Refusal | undefined, cap: number) =>
  refusal === "memory"
    ? new ResultMemoryExhausted({
        message: `The gateway's memory for results is in use by other queries; retry shortly${cap === MAX_RESULT_BYTES ? `, or stream the result (Accept: ${NDJSON})` : ""}`,
        retry_after_seconds: MEMORY_RETRY_AFTER_SECONDS
      })
    : new ResultTooLarge({ message: `The result is larger than ${mib(cap)} MiB; select fewer columns or lower row_limit` })

const refused = (hold: ResultHold) => refusalOf(hold.refusedBy(), hold.cap)

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
    const memory = yield* ResultMemory

    /**
     * Check, table policy, row cap and masking at the source: what every use of customer SQL passes
     * before it reaches a database, decided in memory. `planned`: only its plan will be read.
     */
    const admitted = (query: GovernedQuery, planned: boolean) => {
      const connection = query.target.connection
      const checked = guard.check(query.sql, connection.db_type, connection.allowed_functions)
      if (Either.isLeft(checked)) return { refusal: checked.left, tables: [] } as const
      const analysis = checked.right.analysis
      const tables = [...new Set(analysis.tables.map((t) => t.parts.join(".")))]
      if (query.refusal !== undefined) return { refusal: new GuardRefusal(query.refusal), tables } as const
      const policy = tablePolicyRefusal(analysis.tables, connection, query.reached, analysis.databases)
      if (policy !== undefined) return { refusal: new GuardRefusal(policy), tables } as const
      const capped = capRows(checked.right, query.rowLimit, (sql) => guard.check(sql, connection.db_type, connection.allowed_functions))
      const key = keyOf(query.target.orgId)
      const pads = planned || capped.analysis.kind === "explain" ? PLAN_PADS : key.pads
      // The rewritten text is checked for its shape only: the functions in it are the masking projections' own.
      const masked = maskedAtSource(capped, connection, query.masking, pads, (sql) => guard.check(sql, connection.db_type, "any"))
      if (Either.isLeft(masked)) return { refusal: masked.left, tables } as const
      const runs = masked.right
      const messages: Messages = runs.computesOverPii ? { withhold: true, scrub: undefined, overPii: true } : runs.rewritten ? { withhold: false, scrub: key.scrub, overPii: true } : AS_IS
      return { capped, runs, tables, messages }
    }

    // The caller is told why; the audit row gets the reason as it may be recorded.
    const refusedFacts = (queryId: string, refusal: GuardRefusal, tables: ReadonlyArray<string>): QueryFacts => ({ query_id: queryId, tables, reason: refusal.recorded })
    const blocked = (refusal: GuardRefusal) => new QueryBlocked({ message: `The query was refused: ${refusal.reason}`, reason: refusal.reason })

    /** `admitted` for the effects: a refusal is reported, then failed. */
    const admit = (query: GovernedQuery, queryId: string, report: (facts: QueryFacts) => Effect.Effect<void>, planned = false) =>
      Effect.suspend(() => {
        const decided = admitted(query, planned)
        return "refusal" in decided ? Effect.zipRight(report(refusedFacts(queryId, decided.refusal, decided.tables)), Effect.fail(blocked(decided.refusal))) : Effect.succeed(decided)
      })

    /**
     * A share of the result memory for one result of at most `cap` bytes, held until the caller's
     * scope closes (for a response, once it is written); refused when none is free for a moment.
     */
    const holdFor = (cap: number, deadline: number) =>
      Effect.flatMap(memory.hold(cap, Math.max(0, Math.min(MEMORY_WAIT_MS, deadline - Date.now()))), (hold) =>
        Option.isSome(hold) ? Effect.succeed(hold.value) : Effect.fail(refusalOf("memory", cap))
      )

    /**
     * Runs SQL on the target's pool under the query's deadline, cancelled on the server when it passes; its rows are metered by `hold`.
     * A pool that is open and answers by the deadline itself is not raced against it (a race forks fibers on every query).
     * The pool's reference is held in the caller's scope, with the result's hold.
     */
    const execute = (query: GovernedQuery, sql: string, maxRows: number, messages: Messages, hold: ResultHold, deadline: number) => {
      const withinDeadline = beforeDeadline(deadline, messages)
      const asFailure = (error: ConnectorError) => failureOf(error, messages)
      const opened = pools.poolIn(query.target)
      return Effect.flatMap(pools.isOpen(query.target) ? Effect.mapError(opened, asFailure) : withinDeadline(opened), (pool) => {
        const run = pool.query(sql, {
          // What the wait for result memory left of the timeout.
          timeoutMs: Math.max(1, deadline - DEADLINE_GRACE_MS - Date.now()),
          maxRows,
          meter: hold,
          attribution: attributionComment(query.attribution),
          ...(query.maxBytesBilled === undefined ? {} : { maxBytesBilled: query.maxBytesBilled })
        })
        return pool.answersByDeadline ? Effect.mapError(run, asFailure) : withinDeadline(run)
      })
    }

    const cacheKeyOf = (query: GovernedQuery, sql: string) => ({
      orgId: query.target.orgId,
      connectionId: query.target.connectionId,
      connectionVersion: query.target.version,
      piiVersion: query.pii.version,
      rowLimit: query.rowLimit,
      sql
    })
    const cachedResult = (query: GovernedQuery, sql: string) =>
      (query.target.connection.result_cache_ttl ?? 0) > 0 ? cache.get(cacheKeyOf(query, sql)) : undefined
    // Each organization's key for hashed PII, as the database computes HMAC with it, and what takes it out of a message.
    const keys = new Map<string, { readonly key: Buffer; readonly pads: HashPads; readonly scrub: (text: string) => string }>()
    const keyOf = (orgId: string) => {
      let known = keys.get(orgId)
      if (known === undefined) {
        const key = cipher.orgSecret("pii-hash", orgId)
        const pads = hashPadsOf(key)
        known = { key, pads, scrub: withoutKey(pads) }
        keys.set(orgId, known)
      }
      return known
    }
    const hashKeyOf = (query: GovernedQuery) => keyOf(query.target.orgId).key
    const columnsOf = (result: Pick<QueryResult, "columns">) => result.columns.map((c) => ({ name: c.name, type: c.type, nullable: null }))

    type Admitted = Exclude<ReturnType<typeof admitted>, { readonly refusal: GuardRefusal }>

    /** A database's rows as the caller may see them: masked by lineage, where the statement was not masked at the source alone. */
    const maskedRead = (query: GovernedQuery, admission: Admitted, raw: QueryResult): CachedResult => {
      const masked = maskResult(raw, admission.capped, query.pii.rules, query.target.connection, hashKeyOf(query), admission.runs.rewritten)
      return { ...masked.result, masked: masked.masked }
    }

    /**
     * A result read (or served from the cache) as the caller gets it, with the facts its audit row
     * records: held at its size as JSON, or refused where it is over its cap or the memory left.
     */
    const delivered = (
      query: GovernedQuery,
      queryId: string,
      tables: ReadonlyArray<string>,
      hold: ResultHold,
      started: number,
      result: CachedResult,
      // Metered while read as the values' length; held from here at its size as JSON (a cached result's is known).
      read: { readonly oversized: boolean; readonly cachedBytes?: number }
    ) => {
      const executionMs = Number((performance.now() - started).toFixed(3))
      const bytes = read.oversized ? undefined : (read.cachedBytes ?? resultBytes(result))
      if (bytes === undefined || !hold.settle(bytes)) return { facts: { query_id: queryId, tables, rows: result.rows.length }, refusal: refused(hold) } as const
      const cached = read.cachedBytes !== undefined
      const completeness = result.truncated ? "truncated" : "complete"
      const facts: QueryFacts = {
        query_id: queryId,
        tables,
        completeness,
        cached,
        pii_masked: result.masked,
        rows: result.rows.length,
        columns: result.columns.length,
        execution_ms: executionMs
      }
      const response = {
        query_id: queryId,
        columns: columnsOf(result),
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
      return { facts, bytes, response } as const
    }

    // Untraced: on the per-query path a span per call is measurable CPU (bench/README.md).
    const run = Effect.fnUntraced(function* (
      query: GovernedQuery,
      report: (facts: QueryFacts) => Effect.Effect<void>
    ) {
      const queryId = randomUUID()
      const deadline = deadlineOf(query)
      const connection = query.target.connection
      const admission = yield* admit(query, queryId, report)
      const { capped, runs, tables, messages } = admission
      const ttlSeconds = connection.result_cache_ttl ?? 0
      const started = performance.now()
      const hold = yield* holdFor(MAX_RESULT_BYTES, deadline).pipe(Effect.tapError(() => report({ query_id: queryId, tables })))
      const hit = cachedResult(query, capped.sql)
      let result: CachedResult
      let outcome: ReturnType<typeof delivered>
      // The connector stops reading (and cancels) once the meter refuses a row, so a result over the cap or the memory left is never held whole.
      if (hit !== undefined) {
        result = hit.value
        outcome = delivered(query, queryId, tables, hold, started, result, { oversized: !hold.take(hit.bytes), cachedBytes: hit.bytes })
      } else {
        const raw = yield* execute(query, runs.sql, query.rowLimit, messages, hold, deadline).pipe(
          Effect.tapError(() => report({ query_id: queryId, tables }))
        )
        result = maskedRead(query, admission, raw)
        outcome = delivered(query, queryId, tables, hold, started, result, { oversized: raw.oversized === true })
      }
      yield* report(outcome.facts)
      if (outcome.refusal !== undefined) return yield* outcome.refusal
      if (ttlSeconds > 0 && hit === undefined) cache.set(cacheKeyOf(query, capped.sql), result, outcome.bytes, ttlSeconds * 1000)
      return outcome.response
    })

    /**
     * `run` as plain callbacks, for a caller that plans nothing and caps no cost (a REST request),
     * where it needs no wait of its own: the connection's pool open, result memory free at once, no
     * result cache, a connector with `queryNow`. Undefined, with nothing done or reported, where only
     * `run` can; else the function that gives the statement up (its caller gone). `done` is told
     * once, with the function that gives the result's share of the result memory back, which the
     * caller calls once its response is written (giving up gives it back too).
     */
    const runNow = (
      query: GovernedQuery,
      report: (facts: QueryFacts) => void,
      done: (exit: Exit.Exit<Omit<QueryResponse, "budget">, GovernedQueryError>, release: () => void) => void
    ): (() => void) | undefined => {
      if ((query.target.connection.result_cache_ttl ?? 0) > 0) return undefined
      const pool = pools.openNow(query.target)
      if (pool?.queryNow === undefined || pool.answersByDeadline !== true) return undefined
      const queryId = randomUUID()
      const admission = admitted(query, false)
      if ("refusal" in admission) {
        report(refusedFacts(queryId, admission.refusal, admission.tables))
        done(Exit.fail(blocked(admission.refusal)), () => {})
        return () => {}
      }
      const share = memory.holdNow(MAX_RESULT_BYTES)
      if (share === undefined) return undefined
      const deadline = deadlineOf(query)
      const started = performance.now()
      // What the statement's rows become; a defect (a value JSON cannot hold, a bug) is the caller's to answer, not the driver's callback's to throw.
      const outcomeOf = (exit: Exit.Exit<QueryResult, ConnectorError>): Exit.Exit<Omit<QueryResponse, "budget">, GovernedQueryError> => {
        try {
          if (Exit.isFailure(exit)) {
            report({ query_id: queryId, tables: admission.tables })
            const failure = Cause.failureOption(exit.cause)
            return Option.isSome(failure) ? Exit.fail(failureOf(failure.value, admission.messages)) : Exit.failCause(exit.cause as Cause.Cause<never>)
          }
          const outcome = delivered(query, queryId, admission.tables, share.hold, started, maskedRead(query, admission, exit.value), { oversized: exit.value.oversized === true })
          report(outcome.facts)
          return outcome.refusal !== undefined ? Exit.fail(outcome.refusal) : Exit.succeed(outcome.response)
        } catch (error) {
          return Exit.die(error)
        }
      }
      let told = false
      const giveUp = pool.queryNow(
        admission.runs.sql,
        {
          timeoutMs: Math.max(1, deadline - DEADLINE_GRACE_MS - Date.now()),
          maxRows: query.rowLimit,
          meter: share.hold,
          attribution: attributionComment(query.attribution),
          ...(query.maxBytesBilled === undefined ? {} : { maxBytesBilled: query.maxBytesBilled })
        },
        (exit) => {
          told = true
          try {
            done(outcomeOf(exit), share.end)
          } catch (error) {
            share.end()
            throw error
          }
        }
      )
      // Once told, the result is the caller's: its share is given back when its response is written, not when its client leaves.
      return () => {
        if (told) return
        giveUp()
        share.end()
      }
    }

    /**
     * `run` for results too big to hold: the statement is opened (so a refusal or a failing statement
     * is still an error before any row), then its rows are read, masked and passed on a batch at a
     * time. The row cap applies; the size cap does not, and nothing is cached (a cached result is
     * served). A connector without a cursor reads the whole result first: it is held in the result
     * memory like a buffered one, its cap the whole of that memory. The audit facts are reported
     * when the rows end, however they end.
     */
    const stream = Effect.fnUntraced(function* (query: GovernedQuery, report: (facts: QueryFacts) => Effect.Effect<void>) {
      const queryId = randomUUID()
      const deadline = deadlineOf(query)
      const { capped, runs, tables, messages } = yield* admit(query, queryId, report)
      const started = performance.now()
      const withinDeadline = beforeDeadline(deadline, messages)
      const hit = cachedResult(query, capped.sql)
      const held = holdFor(memory.limit, deadline)
      const source =
        hit !== undefined
          ? yield* Effect.gen(function* () {
              const hold = yield* held
              if (!hold.take(hit.bytes)) return yield* refused(hold)
              return { columns: hit.value.columns, masked: hit.value.masked, next: onceThenEmpty(hit.value.rows) }
            }).pipe(Effect.tapError(() => report({ query_id: queryId, tables, streamed: true })))
          : yield* Effect.gen(function* () {
              const pool = yield* withinDeadline(pools.poolIn(query.target))
              const hold = pool.stream === undefined ? yield* held : undefined
              const opened = yield* withinDeadline(
                batchesOf(pool, runs.sql, {
                  timeoutMs: query.timeoutMs,
                  maxRows: query.rowLimit,
                  attribution: attributionComment(query.attribution),
                  ...(query.maxBytesBilled === undefined ? {} : { maxBytesBilled: query.maxBytesBilled }),
                  ...(hold !== undefined ? { meter: hold } : {})
                })
              )
              if (hold?.refusedBy() !== undefined) return yield* refused(hold)
              const plan = maskPlan(opened.columns, capped, query.pii.rules, query.target.connection, hashKeyOf(query), runs.rewritten)
              const next = withinDeadline(opened.next)
              return {
                columns: plan?.columns ?? opened.columns,
                masked: plan?.masked ?? [],
                next: plan === undefined ? next : Effect.map(next, (rows) => rows.map(plan.maskRow))
              }
            }).pipe(Effect.tapError(() => report({ query_id: queryId, tables, streamed: true })))
      let rowCount = 0
      let truncated = hit?.value.truncated ?? false
      let ended = false
      const rows = Stream.repeatEffectOption(
        Effect.suspend(() => (ended ? Effect.fail(Option.none()) : Effect.mapError(source.next, Option.some))).pipe(
          Effect.flatMap((batch) => {
            const room = query.rowLimit - rowCount
            if (batch.length > room) truncated = true
            const kept = batch.length > room ? batch.slice(0, room) : batch
            rowCount += kept.length
            if (batch.length === 0 || truncated) ended = true
            return kept.length === 0 ? Effect.fail(Option.none()) : Effect.succeed(kept)
          })
        )
      )
      const tail = (): StreamedTail => ({
        row_count: rowCount,
        completeness: truncated ? "truncated" : "complete",
        truncated_at: truncated ? query.rowLimit : null,
        execution_ms: Number((performance.now() - started).toFixed(3)),
        bytes_scanned: null
      })
      const reportEnd = Effect.suspend(() =>
        report({
          query_id: queryId,
          tables,
          streamed: true,
          cached: hit !== undefined,
          pii_masked: source.masked,
          rows: rowCount,
          columns: source.columns.length,
          ...(ended ? { completeness: tail().completeness, execution_ms: tail().execution_ms } : {})
        })
      )
      return {
        head: { query_id: queryId, columns: columnsOf(source), cached: hit !== undefined, pii_masked: source.masked, tables },
        rows: Stream.ensuring(rows, reportEnd),
        tail
      } satisfies StreamedQuery
    })

    /** The engine's plan of a statement, metered as a result is, and given back as soon as it is summarized. */
    const explained = (query: GovernedQuery, statement: string, messages: Messages) =>
      Effect.scoped(
        Effect.gen(function* () {
          const deadline = deadlineOf(query)
          const hold = yield* holdFor(MAX_RESULT_BYTES, deadline)
          const plan = yield* execute(query, statement, 10_000, messages, hold, deadline)
          return plan.oversized === true ? yield* refused(hold) : plan
        })
      )

    /** The plan of what `run` would execute, from the engine's own EXPLAIN; nothing runs. */
    const explain = Effect.fnUntraced(function* (
      query: GovernedQuery,
      report: (facts: QueryFacts) => Effect.Effect<void>
    ) {
      const queryId = randomUUID()
      const dbType = query.target.connection.db_type
      const { capped, runs, tables, messages } = yield* admit(query, queryId, report, true)
      const statement = explainStatement(dbType, runs.sql)
      const failed = () => report({ query_id: queryId, tables })
      if (capped.analysis.kind !== "query") {
        yield* failed()
        return yield* new InvalidRequest({ message: "Only a query has a plan to explain" })
      }
      const summary =
        statement !== undefined
          ? summarizePlan(dbType, scrubbed(yield* explained(query, statement, messages).pipe(Effect.tapError(failed)), messages))
          : yield* pools
              .withPool(query.target, (pool): Effect.Effect<PlanSummary, InvalidRequest | ConnectorError> =>
                pool.dryRun === undefined
                  ? Effect.fail(new InvalidRequest({ message: `EXPLAIN is not available for ${dbType} connections in this build` }))
                  : Effect.map(pool.dryRun(runs.sql), dryRunSummary)
              )
              .pipe(
                Effect.catchTag("ConnectorError", (error) => Effect.fail(failureOf(error, messages))),
                Effect.tapError(failed)
              )
      yield* report({ query_id: queryId, tables, planned: true })
      return { query_id: queryId, ...(runs.rewritten ? planShape(dbType, summary) : summary), tables, sql: capped.sql }
    })

    return { run, runNow, stream, explain } as const
  }),
  dependencies: [SqlGuard.Default, ResultCache.Default, ResultMemory.Default, ConnectorPools.Default, CredentialCipher.Default]
}) {}
