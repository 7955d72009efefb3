import type { Prompt } from "@effect/ai"
import { Activity, DurableDeferred } from "@effect/workflow"
import { Effect, Schema } from "effect"
import type { OrgId } from "../../src/domain/Ids"
import { JobSteps } from "../../src/jobs/JobSteps"
import { DecisionSteps } from "./agentRun/DecisionSteps"
import { ModelTurnStep } from "./agentRun/ModelTurnStep"
import { QueryApprovalSteps } from "./agentRun/QueryApprovalSteps"
import { RunLifecycle } from "./agentRun/RunLifecycle"
import { ToolCallStep } from "./agentRun/ToolCallStep"
import {
  AgentRunWorkflow,
  ASK_USER,
  CostCheck,
  decisionFor,
  ModelTurn,
  RunStart,
  RunStopped,
  type ToolCallRequest,
  type ToolResult,
  ToolResult as ToolResultSchema
} from "../../src/jobs/AgentRunWorkflow"

const assistantMessage = (turn: ModelTurn): Prompt.MessageEncoded => ({
  role: "assistant",
  content: [
    ...(turn.text.length > 0 ? [{ type: "text" as const, text: turn.text }] : []),
    ...turn.toolCalls.map((call) => ({ type: "tool-call" as const, id: call.id, name: call.name, params: call.params, providerExecuted: false }))
  ]
})

const toolMessage = (results: ReadonlyArray<ToolResult>): Prompt.MessageEncoded => ({
  role: "tool",
  content: results.map((result) => ({ type: "tool-result" as const, id: result.id, name: result.name, isFailure: result.isFailure, result: result.text, providerExecuted: false }))
})

const declinedQuery = (call: ToolCallRequest): ToolResult => ({
  id: call.id,
  name: call.name,
  text: "The user declined to run this query. Do not run it again; answer without it or propose a cheaper query.",
  isFailure: true,
  stopped: false
})

const questionOf = (params: unknown) => {
  const question = (params as { question?: unknown } | null)?.question
  return typeof question === "string" && question.trim().length > 0 ? question.slice(0, 2000) : null
}

/**
 * An agent run: model turns and the tool calls they ask for, each a durable step. After a crash the
 * run resumes on another runner at the step it was in: completed steps are not done again, and the
 * conversation is rebuilt from their recorded results.
 */
export const AgentRunJob = AgentRunWorkflow.toLayer(({ runId, orgId: org }) =>
  Effect.gen(function* () {
    const lifecycle = yield* RunLifecycle
    const model = yield* ModelTurnStep
    const tools = yield* ToolCallStep
    const approvals = yield* QueryApprovalSteps
    const decisions = yield* DecisionSteps
    const kit = yield* JobSteps
    const orgId = org as OrgId
    /** A named step of the run: done once to its end (JobSteps), journaled by the workflow, and a failure in it ends the run. */
    const runStep = <A, I>(name: string, success: Schema.Schema<A, I>, execute: Effect.Effect<A, RunStopped>) =>
      Activity.make({ name, success, error: RunStopped, execute: lifecycle.guarded(orgId, runId, kit.once(runId, name, success, execute)) })
    const start = yield* runStep("begin", RunStart, lifecycle.begin(orgId, runId))
    const conversation: Array<Prompt.MessageEncoded> = [
      ...start.history.flatMap((exchange): Array<Prompt.MessageEncoded> => [
        { role: "user", content: exchange.prompt },
        { role: "assistant", content: [{ type: "text", text: exchange.answer }] }
      ]),
      { role: "user", content: start.prompt }
    ]
    // The step ends the run: it always fails with RunStopped.
    const cancelled = Effect.zipRight(
      runStep("cancelled", Schema.Void, lifecycle.fail(orgId, runId, "cancelled", "cancelled", "The run was cancelled")),
      Effect.dieMessage("a cancelled run went on")
    )

    /** Waits for the user's decision at `step`, and records it; a cancellation while waiting ends the run. */
    const decided = (step: string) =>
      Effect.gen(function* () {
        const decision = yield* DurableDeferred.await(decisionFor(step))
        if (decision.kind === "cancelled") return yield* cancelled
        yield* runStep(`decided/${step}`, Schema.Void, decisions.decided(orgId, runId, step, decision))
        return decision
      })

    /** A tool call, after the user's approval when its query's estimate asks for one. */
    const toolCall = (step: string, call: ToolCallRequest) =>
      Effect.gen(function* () {
        const check = yield* runStep(`estimate/${step}`, CostCheck, approvals.estimate(orgId, runId, step, call))
        if (check.needsApproval && (yield* decided(step)).kind === "decline") return declinedQuery(call)
        const result = yield* runStep(`tool/${step}`, ToolResultSchema, tools.callTool(orgId, runId, step, call, check.estimatedUsd, !check.needsApproval))
        if (!result.stopped) return result
        // Stopped at what the threshold allows: now it needs the user's approval, as a query estimated over it does.
        yield* runStep(`stopped/${step}`, Schema.Void, approvals.approveAfterStop(orgId, runId, step, call, result))
        if ((yield* decided(`${step}/stopped`)).kind === "decline") return declinedQuery(call)
        return yield* runStep(`tool/${step}/approved`, ToolResultSchema, tools.callTool(orgId, runId, `${step}/approved`, call, check.estimatedUsd, false))
      })

    for (let turn = 0; turn < start.maxTurns; turn++) {
      const reply = yield* runStep(`model/${turn}`, ModelTurn, model.think(orgId, runId, turn, start.connectionName, [...conversation]))
      conversation.push(assistantMessage(reply))
      if (reply.toolCalls.length === 0) {
        return yield* runStep("complete", Schema.Void, lifecycle.complete(orgId, runId, reply.text))
      }
      const results: Array<ToolResult> = []
      for (const [index, call] of reply.toolCalls.entries()) {
        const step = `${turn}/${index}`
        // A run that may not ask has no such tool: the call is refused as any unknown tool's is.
        const question = call.name === ASK_USER && start.interactive ? questionOf(call.params) : null
        if (question === null) {
          results.push(yield* toolCall(step, call))
          continue
        }
        yield* runStep(`ask/${step}`, Schema.Void, decisions.ask(orgId, runId, step, question))
        const answer = yield* decided(step)
        results.push({ id: call.id, name: call.name, text: answer.kind === "answer" ? answer.text : "", isFailure: false, stopped: false })
      }
      conversation.push(toolMessage(results))
    }
    return yield* runStep("out-of-turns", Schema.Void, lifecycle.fail(orgId, runId, "failed", "max_turns", `The run reached its limit of ${start.maxTurns} turns without an answer`))
  })
)
