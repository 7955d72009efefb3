import { Effect } from "effect"
import type { OrgId } from "../../../src/domain/Ids"
import type { Decision } from "../../../src/jobs/AgentRunWorkflow"
import { AgentRunsRepo } from "../../../src/repos/AgentRunsRepo"
import { RunLifecycle } from "./RunLifecycle"

/** A run's question to its user, and the user's decisions (an answer, a query approved or declined) as the run records them. */
export class DecisionSteps extends Effect.Service<DecisionSteps>()("sluice/DecisionSteps", {
  effect: Effect.gen(function* () {
    const { guarded, load, actingAs, writeEvent } = yield* RunLifecycle
    const repo = yield* AgentRunsRepo

    /** The run waits for its user's answer to `question`. */
    const ask = (orgId: OrgId, runId: string, step: string, question: string) =>
      guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          yield* actingAs(yield* load(orgId, runId))
          yield* writeEvent(orgId, runId, `ask/${step}`, "question", { step, question })
          yield* repo.setStatus(orgId, runId, "waiting_for_user", { pending: { kind: "question", step, question } })
        })
      )

    /** Records the user's answer or approval decision at `step`, and the run goes on. */
    const decided = (orgId: OrgId, runId: string, step: string, decision: Exclude<Decision, { kind: "cancelled" }>) =>
      guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          yield* decision.kind === "answer"
            ? writeEvent(orgId, runId, `decided/${step}`, "answer", { step, answer: decision.text })
            : writeEvent(orgId, runId, `decided/${step}`, "approval", { step, approved: decision.kind === "approve" })
          yield* repo.setStatus(orgId, runId, "running")
        })
      )

    return { ask, decided } as const
  }),
  dependencies: [RunLifecycle.Default, AgentRunsRepo.Default]
}) {}
