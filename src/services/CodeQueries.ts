import { randomUUID, timingSafeEqual } from "node:crypto"
import { Effect, Either, Schema } from "effect"
import type { Principal } from "../domain/Principal"
import type { Scope } from "../domain/Scope"
import { usdOfRun } from "../governance/ExplainPlan"
import type { QueryFacts } from "../governance/GovernedExecutor"
import type { StoredCredential } from "../domain/Principal"
import { ActingPrincipals } from "./ActingPrincipals"
import { Audit } from "./Audit"
import { auditRow, childQueryRows, newAuditDraft } from "./AuditDraft"
import { Connections } from "./Connections"
import { QueryCostCap, Queries } from "./Queries"

/** Where a governed query of running code reports its audit facts, with its SQL. */
export type ChildReport = (facts: QueryFacts, sql: string, connection: string) => Effect.Effect<void>

/** Code that queries through the gateway from a sandbox or a notebook session: who it acts as and within what. */
export interface CodeSource {
  readonly kind: "sandbox" | "notebook"
  readonly id: string
  /** Its starter's credential, checked again at each query. */
  readonly credential: StoredCredential
  /** At most what its starter held when it started, and never above read and query. */
  readonly scopes: ReadonlyArray<Scope>
  /** The one connection it may query, where it was bound to one. */
  readonly connectionName: string | null
  readonly rowLimit: number | null
  readonly budgetUsd: number | null
  /** The secret its `sluice` module sends with each request. */
  readonly token: Buffer
  /** Counted here as its queries run. */
  readonly counters: { queries: number; spentUsd: number }
  /** Budgeted queries take turns, so together they never spend past the budget. */
  readonly budgetLock: Effect.Semaphore
  readonly running: () => boolean
  /** Where the call in progress wants its queries' facts (an execute's request, a tool call); none: each query is audited on its own. */
  readonly report: () => ChildReport | undefined
  /** Who called the code now running, if anyone: its queries act as them (never beyond `scopes`), not as its starter. */
  readonly caller: () => Principal | undefined
}

const DataRequest = Schema.Struct({
  token: Schema.String,
  sql: Schema.String,
  connection: Schema.optional(Schema.String),
  row_limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 100_000)))
})

const DEFAULT_ROW_LIMIT = 1000

const refusal = (code: string, message: string) => ({ error: { code, message } })

/**
 * The governed requests of code running next to the data (a sandbox's or a notebook's `sluice`
 * module, over its Unix socket): each a query as its starter, through the same executor and audit
 * as POST /api/query, within its connection, row limit and budget. Answers are JSON for the module.
 */
export class CodeQueries extends Effect.Service<CodeQueries>()("sluice/CodeQueries", {
  effect: Effect.gen(function* () {
    const queries = yield* Queries
    const connections = yield* Connections
    const acting = yield* ActingPrincipals
    const audit = yield* Audit

    const routeOf = (source: CodeSource) => `/api/${source.kind === "sandbox" ? "sandboxes" : "notebook-sessions"}/${source.id}`

    /** A request refused before any query ran, audited as refused (under whoever it acted as, once known), then answered. */
    const refused = (source: CodeSource, who: Principal | null, sql: string | null, code: string, message: string) => {
      const draft = newAuditDraft(randomUUID(), `${source.kind}_query`, who, source.credential.orgId)
      draft.sql = sql
      draft.details = { parent: { event_type: `${source.kind}_query`, [`${source.kind}_id`]: source.id }, code }
      return audit.record(null, auditRow(draft, { route: routeOf(source), durationMs: 0, outcome: "refused", blockReason: code })).pipe(
        Effect.catchAll((error) => Effect.logWarning("a refused query of running code could not be audited", error.message)),
        Effect.as(refusal(code, message))
      )
    }

    /** Who the code's query acts as: the caller of the code now running, or else its starter's credential checked again; never beyond `scopes`. */
    const actingFor = (source: CodeSource) => {
      const caller = source.caller()
      return caller !== undefined
        ? Effect.succeed(Either.right<Principal>({ ...caller, scopes: caller.scopes.filter((scope) => source.scopes.includes(scope)) }))
        : acting.actingAs(source.credential, new Set(source.scopes), source.kind).pipe(Effect.either)
    }

    const answer = (source: CodeSource, raw: unknown) =>
      Effect.gen(function* () {
        const decoded = Schema.decodeUnknownEither(DataRequest)(raw)
        if (Either.isLeft(decoded)) return yield* refused(source, null, null, "invalid_request", "a query needs sql (a string), and may have connection and row_limit (1–100000)")
        const request = decoded.right
        const given = Buffer.from(request.token)
        if (given.length !== source.token.length || !timingSafeEqual(given, source.token)) return yield* refused(source, null, null, "unauthenticated", `this ${source.kind}'s token does not open it`)
        if (!source.running()) return yield* refused(source, null, request.sql, "not_found", `the ${source.kind} is gone`)
        const principal = yield* actingFor(source)
        if (Either.isLeft(principal)) {
          const gone = principal.left._tag === "CredentialGone"
          return yield* gone ? refused(source, null, request.sql, "credential_revoked", principal.left.message) : Effect.succeed(refusal("unavailable", principal.left.message))
        }
        const who = principal.right
        if (!who.scopes.includes("query")) return yield* refused(source, who, request.sql, "insufficient_scope", `the key running this ${source.kind}'s code may not run queries (the query scope)`)
        const connection = request.connection ?? source.connectionName
        if (connection === null) {
          return yield* refused(source, who, request.sql, "invalid_request", `name a connection: sluice.query(sql, connection=...)${source.kind === "sandbox" ? ", or create the sandbox with connection_name" : ""}`)
        }
        if (source.connectionName !== null && connection !== source.connectionName) {
          return yield* refused(source, who, request.sql, "forbidden", `this ${source.kind} queries only the connection ${source.connectionName}`)
        }
        const rowLimit = Math.min(request.row_limit ?? source.rowLimit ?? DEFAULT_ROW_LIMIT, source.rowLimit ?? 100_000)
        const within = source.report()
        // A query made while no call runs (a notebook's, or a thread left behind) is audited on its own.
        const alone = within === undefined ? newAuditDraft(randomUUID(), `${source.kind}_query`, who) : undefined
        const sink: ChildReport =
          within ??
          ((facts, sql, connection) => Effect.sync(() => alone!.childQueries.set(facts.query_id, { facts, sql, connection, parent: { event_type: `${source.kind}_query`, [`${source.kind}_id`]: source.id } })))
        const report = (facts: QueryFacts) => sink(facts, request.sql, connection)
        const run = queries.run(who, { connection_name: connection, sql: request.sql, row_limit: rowLimit }, { surface: "rest", requestId: alone?.requestId ?? randomUUID(), report })
        const budget = source.budgetUsd
        const ran =
          budget === null
            ? yield* run.pipe(Effect.scoped, Effect.either)
            : yield* source.budgetLock.withPermits(1)(
                Effect.gen(function* () {
                  const remainingUsd = budget - source.counters.spentUsd
                  if (remainingUsd <= 0) return Either.left({ code: "budget_exhausted", message: `this ${source.kind}'s budget of $${budget} is spent` })
                  const dbType = (yield* connections.target(who, connection)).connection.db_type
                  // No statement runs past what is left of the budget, at the engine's list price.
                  const outcome = yield* Effect.provideService(run, QueryCostCap, { usd: remainingUsd, stopped: Effect.void }).pipe(Effect.scoped, Effect.either)
                  if (Either.isRight(outcome)) source.counters.spentUsd += Math.min(remainingUsd, usdOfRun(dbType, outcome.right))
                  return outcome
                }).pipe(Effect.catchAll((error) => Effect.succeed(Either.left(error))))
              )
        source.counters.queries += 1
        if (alone !== undefined) yield* audit.record(null, ...childQueryRows(alone, auditRow(alone, { route: routeOf(source), durationMs: 0, outcome: "success" })))
        if (Either.isLeft(ran)) {
          const error = ran.left as { readonly code?: string; readonly message?: string }
          // Spent before it ran: no query of its own is audited, so the refusal is.
          if (error.code === "budget_exhausted") return yield* refused(source, who, request.sql, error.code, error.message ?? "the budget is spent")
          return refusal(error.code ?? "query_failed", error.message ?? "the query failed")
        }
        const { query_id, columns, rows, row_count, truncated_at, pii_masked } = ran.right
        return { query_id, columns, rows, row_count, truncated_at, pii_masked }
      }).pipe(
        Effect.catchAll((error) => Effect.succeed(refusal("unavailable", "message" in error ? String(error.message) : "the gateway could not answer"))),
        Effect.catchAllDefect(() => Effect.succeed(refusal("internal", "the gateway could not answer")))
      )

    return { answer } as const
  }),
  dependencies: [Queries.Default, Connections.Default, ActingPrincipals.Default, Audit.Default]
}) {}
