import type { Prompt } from "@effect/ai"
import { Activity, DurableDeferred } from "@effect/workflow"
import { Effect } from "effect"
import type { OrgId } from "../../src/domain/Ids"
import { AgentRunSteps } from "./AgentRunSteps"
import { AgentRunWorkflow, answerFor, ASK_USER, ModelTurn, RunStart, RunStopped, type ToolResult, ToolResult as ToolResultSchema } from "./AgentRunWorkflow"

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
    const steps = yield* AgentRunSteps
    const orgId = org as OrgId
    const start = yield* Activity.make({ name: "begin", success: RunStart, error: RunStopped, execute: steps.begin(orgId, runId) })
    const conversation: Array<Prompt.MessageEncoded> = [{ role: "user", content: start.prompt }]
    for (let turn = 0; turn < start.maxTurns; turn++) {
      const reply = yield* Activity.make({
        name: `model/${turn}`,
        success: ModelTurn,
        error: RunStopped,
        execute: steps.think(orgId, runId, turn, start.connectionName, [...conversation])
      })
      conversation.push(assistantMessage(reply))
      if (reply.toolCalls.length === 0) {
        return yield* Activity.make({ name: "complete", error: RunStopped, execute: steps.complete(orgId, runId, reply.text) })
      }
      const results: Array<ToolResult> = []
      for (const [index, call] of reply.toolCalls.entries()) {
        const step = `${turn}/${index}`
        const question = call.name === ASK_USER ? questionOf(call.params) : null
        if (question === null) {
          results.push(yield* Activity.make({ name: `tool/${step}`, success: ToolResultSchema, error: RunStopped, execute: steps.callTool(orgId, runId, step, call) }))
          continue
        }
        yield* Activity.make({ name: `ask/${step}`, error: RunStopped, execute: steps.ask(orgId, runId, step, question) })
        const answer = yield* DurableDeferred.await(answerFor(step))
        if (answer.kind === "cancelled") {
          return yield* Activity.make({ name: "cancelled", error: RunStopped, execute: steps.fail(orgId, runId, "cancelled", "cancelled", "The run was cancelled") })
        }
        yield* Activity.make({ name: `answer/${step}`, error: RunStopped, execute: steps.answered(orgId, runId, step, answer.text) })
        results.push({ id: call.id, name: call.name, text: answer.text, isFailure: false })
      }
      conversation.push(toolMessage(results))
    }
    return yield* Activity.make({
      name: "out-of-turns",
      error: RunStopped,
      execute: steps.fail(orgId, runId, "failed", "max_turns", `The run reached its limit of ${start.maxTurns} turns without an answer`)
    })
  })
)
