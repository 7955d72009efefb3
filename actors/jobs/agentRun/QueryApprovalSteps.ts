import { Effect } from "effect"
import { AppConfig } from "../../../layers/AppConfig"
import type { PendingAsk } from "../../../src/domain/AgentRun"
import type { OrgId } from "../../../src/domain/Ids"
import { formatUsd } from "../../../src/domain/Usd"
import type { ToolCallRequest, ToolResult } from "../../../src/jobs/AgentRunWorkflow"
import { AgentRunsRepo } from "../../../src/repos/AgentRunsRepo"
import { ToolCatalogue } from "../../../src/tools/ToolCatalogue"
import { RunLifecycle } from "./RunLifecycle"
import { ToolCallStep } from "./ToolCallStep"

/** The cost checks before and after a run's query, and the user's approval they ask for when a query costs more than the run may spend unasked. */
export class QueryApprovalSteps extends Effect.Service<QueryApprovalSteps>()("sluice/QueryApprovalSteps", {
  effect: Effect.gen(function* () {
    const { guarded, load, actingAs, writeEvent } = yield* RunLifecycle
    const { runAudited } = yield* ToolCallStep
    const repo = yield* AgentRunsRepo
    const { byName } = yield* ToolCatalogue
    const config = yield* AppConfig

    /** The run waits for its user's decision on a query (the event at `eventStep`, the decision at `pending.step`). */
    const awaitApproval = (orgId: OrgId, runId: string, eventStep: string, ask: Omit<Extract<PendingAsk, { kind: "query_approval" }>, "kind">) =>
      Effect.gen(function* () {
        const pending: PendingAsk = { kind: "query_approval", ...ask }
        yield* writeEvent(orgId, runId, eventStep, "approval_requested", pending)
        yield* repo.setStatus(orgId, runId, "waiting_for_query_approval", { pending })
      })

    /**
     * A query the run had not had approved was stopped at what the approval threshold allows while it
     * ran (its estimate was too low): the run asks its user before running it again, uncapped.
     */
    const approveAfterStop = (orgId: OrgId, runId: string, step: string, call: ToolCallRequest, stopped: ToolResult) =>
      guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          yield* actingAs(yield* load(orgId, runId))
          const ran = yield* repo.eventOf(orgId, runId, `tool/${step}`)
          yield* awaitApproval(orgId, runId, `stopped/${step}`, {
            step: `${step}/stopped`,
            tool: call.name,
            connection_name: typeof ran?.["connection"] === "string" ? ran["connection"] : "",
            sql: typeof ran?.["sql"] === "string" ? ran["sql"] : "",
            estimated_usd: config.agentQueryApprovalUsd,
            reason: `it ran past what its estimate allowed and was stopped (${stopped.text.replace(/^query_timeout: |^query_failed: /, "")})`
          })
        })
      )

    /**
     * Before a tool that reads rows (the query scope) runs: the tool itself run with each of its
     * statements planned instead of run (through the same tool path and audit), and the run set
     * waiting for the user's approval when the statements' estimated cost is over the per-query
     * threshold or would take the conversation's estimated spend past its budget. An estimate that
     * cannot be made (no plan, a refused statement) asks nothing: the call itself then fails or runs
     * under the budgets.
     */
    const estimate = (orgId: OrgId, runId: string, step: string, call: ToolCallRequest) =>
      guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          if (byName.get(call.name)?.scope !== "query") return { estimatedUsd: null, needsApproval: false }
          const stored = yield* load(orgId, runId)
          const principal = yield* actingAs(stored)
          const plans: Array<{ readonly sql: string; readonly estimated_usd: number | null }> = []
          const planning = { planned: (plan: (typeof plans)[number]) => Effect.sync(() => plans.push(plan)) }
          const planned = yield* runAudited(principal, runId, `estimate/${step}`, call.name, call.params, { planning })
          const known = plans.flatMap((plan) => (plan.estimated_usd === null ? [] : [plan.estimated_usd]))
          if (known.length === 0) return { estimatedUsd: null, needsApproval: false }
          const usd = known.reduce((sum, each) => sum + each, 0)
          const spent = yield* repo.estimatedSpend(orgId, stored.run.conversation_id, runId)
          const reason =
            usd > config.agentQueryApprovalUsd
              ? `estimated at ${formatUsd(usd)}, over the $${config.agentQueryApprovalUsd} a query may cost without approval`
              : spent + usd > config.agentConversationBudgetUsd
                ? `estimated at ${formatUsd(usd)}, which takes the ${stored.run.conversation_id === null ? "run" : "conversation"}'s query spend (${formatUsd(spent)} so far) past its $${config.agentConversationBudgetUsd} budget`
                : null
          if (reason === null) return { estimatedUsd: usd, needsApproval: false }
          yield* awaitApproval(orgId, runId, `estimate/${step}`, {
            step,
            tool: call.name,
            connection_name: planned.draft.connection ?? "",
            sql: plans.map((plan) => plan.sql).join(";\n"),
            estimated_usd: usd,
            reason
          })
          return { estimatedUsd: usd, needsApproval: true }
        })
      )

    return { estimate, approveAfterStop } as const
  }),
  dependencies: [RunLifecycle.Default, ToolCallStep.Default, AgentRunsRepo.Default, ToolCatalogue.Default]
}) {}
