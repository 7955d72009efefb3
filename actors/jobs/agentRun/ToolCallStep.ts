import { Effect, Either, identity, Schedule } from "effect"
import { AppConfig } from "../../../layers/AppConfig"
import { RUNNER_LABEL } from "../../../layers/RunnerIdentity"
import type { Unavailable } from "../../../src/domain/Errors"
import type { OrgId } from "../../../src/domain/Ids"
import type { Principal } from "../../../src/domain/Principal"
import { type AuditDraft, auditRow, childQueryRows, newAuditDraft } from "../../../src/services/AuditDraft"
import type { ToolCallRequest } from "../../../src/jobs/AgentRunWorkflow"
import { AgentRunsRepo } from "../../../src/repos/AgentRunsRepo"
import type { AuditInsert } from "../../../src/repos/AuditInsert"
import { PendingChange } from "../../../src/repos/ChangeRecord"
import { Audit, changeRecord, closeChangeRecord } from "../../../src/services/Audit"
import { QueryCostCap, QueryPlanning } from "../../../src/services/Queries"
import { ToolCalls } from "../../../src/tools/ToolCalls"
import { ToolCatalogue } from "../../../src/tools/ToolCatalogue"
import { offered, type ToolDefinition, type ToolFailure, type ToolOutput } from "../../../src/tools/ToolDefinition"
import { firstSuccess, RunLifecycle } from "./RunLifecycle"

const PROPOSE_KNOWLEDGE = "propose_knowledge"
const MAX_PROPOSALS_PER_RUN = 10
const proposalLimit: ToolFailure = {
  code: "proposal_limit",
  message: `This run has made ${MAX_PROPOSALS_PER_RUN} knowledge proposals, the most a run makes; name what else you would propose in your answer instead`
}

/**
 * What the gate answers a tool call when a store it checks limits in is down: not a result for the
 * model, a reason to try again. Only the gate's answer: nothing of the tool has run, so trying again
 * repeats nothing (a failure inside a tool may come after it acted).
 */
const UNAVAILABLE = "unavailable"
/** Waits 0.5, 1, 2 and 4 s (jittered) between five tries: a store that blinks is waited for; one that stays down stops the run. */
const infrastructureRetry = Schedule.exponential("500 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(4)))

/** A tool call's audit draft, its row tied to the run and step. */
const toolCallDraft = (principal: Principal, runId: string, step: string, plannedOnly: boolean): AuditDraft => ({
  ...newAuditDraft(`${runId}:${step}`, "agent_tool_call", principal),
  details: { run_id: runId, step, ...(plannedOnly ? { planned_only: true } : {}) }
})
/** What running a tool left: its outcome, its audit draft with the queries it ran, and the writing of its audit rows, still to do. */
interface ToolRan {
  readonly outcome: Either.Either<ToolOutput, ToolFailure>
  readonly draft: AuditDraft
  readonly durationMs: number
  /** A query of it was stopped at the cost it may run to without approval. */
  readonly stoppedAtCostCap: boolean
  readonly audited: Effect.Effect<void, Unavailable>
}

const toolCallRow = (draft: AuditDraft, runId: string, durationMs: number): AuditInsert =>
  auditRow(draft, { route: `/api/agent-runs/${runId}`, durationMs, outcome: draft.outcome ?? "success", blockReason: draft.blockReason })

/** A run's tool calls: the tool the model asked for, run as any client's call runs and audited as the run's. */
export class ToolCallStep extends Effect.Service<ToolCallStep>()("sluice/ToolCallStep", {
  effect: Effect.gen(function* () {
    const { guarded, load, actingAs, stop, writeEvent } = yield* RunLifecycle
    const repo = yield* AgentRunsRepo
    const { byName } = yield* ToolCatalogue
    const toolCalls = yield* ToolCalls
    const audit = yield* Audit
    const config = yield* AppConfig

    /**
     * Runs one tool of the MCP tool table as any client's call runs: scope, limits, decoding, the
     * governed executor, and audit rows tied to the run and step.
     */
    const runTool = (
      principal: Principal,
      runId: string,
      step: string,
      name: string,
      params: unknown,
      options: { readonly planning?: QueryPlanning["Type"]; readonly costCapUsd?: number } = {}
    ): Effect.Effect<ToolRan> =>
      Effect.gen(function* () {
        let stoppedAtCostCap = false
        const costCap: QueryCostCap["Type"] | undefined = options.costCapUsd === undefined ? undefined : { usd: options.costCapUsd, stopped: Effect.sync(() => (stoppedAtCostCap = true)) }
        const found: ToolDefinition | undefined = byName.get(name)
        const tool = found !== undefined && offered(found, principal) ? found : undefined
        const draft = toolCallDraft(principal, runId, step, options.planning !== undefined)
        const started = performance.now()
        // The call's row as known so far commits with the first change the tool makes (a proposal, a report), as a request's does.
        const change = changeRecord(() => toolCallRow(draft, runId, performance.now() - started))
        const outcome: Either.Either<ToolOutput, ToolFailure> =
          tool === undefined
            ? toolCalls.refuse(draft, name, { code: "unknown_tool", message: `There is no tool named ${name} for this run` })
            : yield* Effect.scoped(toolCalls.call(draft, principal, tool, params, "agent_run")).pipe(
                options.planning === undefined ? identity : Effect.provideService(QueryPlanning, options.planning),
                costCap === undefined ? identity : Effect.provideService(QueryCostCap, costCap),
                Effect.provideService(PendingChange, change)
              )
        const durationMs = performance.now() - started
        const written = closeChangeRecord(change)
        const row = toolCallRow(draft, runId, durationMs)
        const audited = audit.complete(written, draft.dialect ?? null, row, ...childQueryRows(draft, row, { run_id: runId, step }))
        return { outcome, draft, durationMs, stoppedAtCostCap, audited }
      })

    /** A proposal past the run's limit: refused before the tool runs, and audited as refused. */
    const refusedProposal = (principal: Principal, runId: string, step: string, name: string): ToolRan => {
      const draft = toolCallDraft(principal, runId, step, false)
      const outcome = toolCalls.refuse(draft, name, proposalLimit)
      return { outcome, draft, durationMs: 0, stoppedAtCostCap: false, audited: audit.record(null, toolCallRow(draft, runId, 0)) }
    }

    /** Runs the tool and records its audit rows. */
    const runAudited = (...call: Parameters<typeof runTool>) => Effect.tap(runTool(...call), (ran) => ran.audited)

    /**
     * One tool call the model asked for, with its estimated cost for the spend it adds to. A call whose result was recorded (the step ran before a
     * crash) is not run again.
     */
    const callTool = (orgId: OrgId, runId: string, step: string, call: ToolCallRequest, estimatedUsd: number | null, capped: boolean) => {
      // A store outage after the tool ran does not run it, or write its audit rows, twice.
      const toolCall = firstSuccess<ToolRan>()
      const toolAudited = firstSuccess<void>()
      return guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          // A tool that ran in an earlier try is audited first: the run may have ended since, and what ran is audited all the same.
          const ranBefore = toolCall.kept()
          if (ranBefore !== undefined) yield* toolAudited(ranBefore.audited)
          const done = yield* repo.eventOf(orgId, runId, `tool/${step}`)
          if (done !== null && typeof done["result"] === "string") {
            return { id: call.id, name: call.name, text: done["result"], isFailure: done["is_error"] === true, stopped: done["stopped_at_cost_cap"] === true }
          }
          const principal = yield* actingAs(yield* load(orgId, runId))
          // A model steered by what it read could fill the review queue: a run proposes a few entries, not a flood.
          const overProposals = call.name === PROPOSE_KNOWLEDGE && (yield* repo.toolCallsMade(orgId, runId, PROPOSE_KNOWLEDGE)) >= MAX_PROPOSALS_PER_RUN
          const { outcome, draft, durationMs, stoppedAtCostCap, audited } = overProposals
            ? refusedProposal(principal, runId, step, call.name)
            : yield* toolCall(
                // Not approved, a query runs no further than what the approval threshold allows, whatever its estimate said.
                runTool(principal, runId, step, call.name, call.params, capped ? { costCapUsd: config.agentQueryApprovalUsd } : {}).pipe(
                  Effect.flatMap((ran) =>
                    Either.isLeft(ran.outcome) && ran.outcome.left.atGate === true && ran.outcome.left.code === UNAVAILABLE ? Effect.fail(ran.outcome.left) : Effect.succeed(ran)
                  ),
                  Effect.retry(infrastructureRetry),
                  Effect.catchAll((failure) => stop(orgId, runId, "failed", UNAVAILABLE, `${failure.message} (the run stopped rather than answer without its tool's result)`))
                )
              )
          yield* toolAudited(audited)
          const result = Either.match(outcome, {
            onLeft: (failure) => ({ id: call.id, name: call.name, text: `${failure.code}: ${failure.message}`, isFailure: true, stopped: stoppedAtCostCap }),
            onRight: (output) => ({ id: call.id, name: call.name, text: output.text, isFailure: false, stopped: false })
          })
          yield* writeEvent(orgId, runId, `tool/${step}`, "tool_call", {
            step,
            runner: RUNNER_LABEL,
            tool: call.name,
            connection: draft.connection,
            sql: draft.sql,
            rows: [...draft.childQueries.values()].reduce((sum, child) => sum + (child.facts.rows ?? 0), 0),
            pii_masked: [...draft.childQueries.values()].flatMap((child) => child.facts.pii_masked ?? []),
            query_ids: [...draft.childQueries.keys()],
            estimated_usd: estimatedUsd,
            is_error: result.isFailure,
            duration_ms: Math.round(durationMs),
            result: result.text,
            ...(result.stopped ? { stopped_at_cost_cap: true } : {})
          })
          return result
        })
      )
    }

    return { runAudited, callTool } as const
  }),
  dependencies: [RunLifecycle.Default, AgentRunsRepo.Default, ToolCatalogue.Default, ToolCalls.Default, Audit.Default]
}) {}
