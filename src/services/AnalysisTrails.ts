import { Effect } from "effect"
import type { AnalysisTrail } from "../domain/Chat"
import { NotFound } from "../domain/Errors"
import type { Principal } from "../domain/Principal"
import { AgentRunsRepo } from "../repos/AgentRunsRepo"
import { AuditRepo } from "../repos/AuditRepo"
import { EvalAccess } from "./EvalAccess"

const text = (value: unknown) => (typeof value === "string" ? value : null)

/** From a query id back to what produced it: its audit row, and the agent run, step, conversation and message that asked for it. */
export class AnalysisTrails extends Effect.Service<AnalysisTrails>()("sluice/AnalysisTrails", {
  effect: Effect.gen(function* () {
    const audit = yield* AuditRepo
    const runs = yield* AgentRunsRepo
    const evalAccess = yield* EvalAccess

    const resolve = Effect.fn("AnalysisTrails.resolve")(function* (principal: Principal, queryId: string) {
      const row = yield* audit.byQueryId(principal.orgId, queryId)
      if (row === null) return yield* new NotFound({ message: `There is no query ${queryId} in this organization's audit log` })
      const parent = (row.details?.["parent"] ?? {}) as Record<string, unknown>
      const runId = text(parent["run_id"])
      const step = text(parent["step"])
      const found = runId === null ? null : yield* runs.find(principal.orgId, runId)
      // An evaluation task's run is its staff's (attack 39 F1): to anyone else, the query is the audit log's alone.
      const run = found !== null && evalAccess.maySee(principal, found.evalRunId) ? found : null
      // The audit log keeps statements with their literals redacted; a caller who may query gets the run's own statement.
      const ran = run !== null && step !== null && principal.scopes.includes("query") ? yield* runs.eventOf(principal.orgId, run.run.id, `tool/${step}`) : null
      const ranThis = ran !== null && Array.isArray(ran["query_ids"]) && ran["query_ids"].includes(queryId) && ran["tool"] === "query_database"
      const trail: AnalysisTrail = {
        query_id: queryId,
        connection_name: row.connection,
        sql: ranThis ? text(ran["sql"]) : row.sql,
        surface: run !== null ? "agent" : row.route === "/mcp" ? "mcp" : "rest",
        outcome: row.outcome,
        rows: row.rows,
        executed_at: new Date(row.timestamp * 1000),
        request_id: row.request_id,
        run_id: run?.run.id ?? null,
        step,
        conversation_id: run?.run.conversation_id ?? null,
        message_id: run?.run.conversation_id != null ? `${run.run.id}.answer` : null
      }
      return trail
    })

    return { resolve } as const
  }),
  dependencies: [AuditRepo.Default, AgentRunsRepo.Default, EvalAccess.Default]
}) {}
