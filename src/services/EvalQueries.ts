import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import type { Principal } from "../domain/Principal"
import type { QueryFacts } from "../governance/GovernedExecutor"
import { Audit } from "./Audit"
import { auditRow, childQueryRows, newAuditDraft } from "./AuditDraft"
import { Queries } from "./Queries"

/**
 * The queries an evaluation run makes itself (the build fingerprint's counts, a check's gold SQL):
 * through the governed executor as whoever the run acts as at that moment, each audited with the run
 * (and task) it served, as an `eval_query` row of its own.
 */
export class EvalQueries extends Effect.Service<EvalQueries>()("sluice/EvalQueries", {
  effect: Effect.gen(function* () {
    const queries = yield* Queries
    const audit = yield* Audit

    const run = (principal: Principal, connection: string, sql: string, rowLimit: number, origin: { readonly eval_run_id: string; readonly task_id?: string }) =>
      Effect.gen(function* () {
        const draft = newAuditDraft(randomUUID(), "eval_query", principal)
        draft.connection = connection
        const report = (facts: QueryFacts) => Effect.sync(() => void draft.childQueries.set(facts.query_id, { facts, sql, connection, parent: { event_type: "eval_query", ...origin } }))
        const ran = yield* queries.run(principal, { connection_name: connection, sql, row_limit: rowLimit }, { surface: "rest", requestId: draft.requestId, report }).pipe(Effect.scoped, Effect.either)
        // Audited as eval_query, not query: an agent's query_history lists an organization's queries, and a set's gold SQL must not be among them (attack 37 F4).
        const rows = childQueryRows(draft, auditRow(draft, { route: `/api/evals/runs/${origin.eval_run_id}`, durationMs: 0, outcome: "success" }))
        yield* audit.record(null, ...rows.map((row) => ({ ...row, event_type: "eval_query" })))
        return ran
      })

    return { run } as const
  }),
  dependencies: [Queries.Default, Audit.Default]
}) {}
