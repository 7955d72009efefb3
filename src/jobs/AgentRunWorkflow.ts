import { DurableDeferred, Workflow } from "@effect/workflow"
import { Effect, Schema } from "effect"
import { AgentRunsRepo } from "../repos/AgentRunsRepo"
import { jobKind } from "./JobKind"

// The agent run's workflow as starters and runners both know it; its steps are in actors/jobs/agentRun/, its body in AgentRunJob.

/** A run ended early: cancelled, or failed in a way the model cannot help with. Its status is written before this is raised. */
export class RunStopped extends Schema.TaggedError<RunStopped>()("RunStopped", {
  status: Schema.Literal("failed", "cancelled"),
  code: Schema.String,
  message: Schema.String
}) {}

export const ToolCallRequest = Schema.Struct({ id: Schema.String, name: Schema.String, params: Schema.Unknown })
export type ToolCallRequest = typeof ToolCallRequest.Type

/** What the model said in one turn. */
export const ModelTurn = Schema.Struct({ text: Schema.String, toolCalls: Schema.Array(ToolCallRequest) })
export type ModelTurn = typeof ModelTurn.Type

export const ToolResult = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  text: Schema.String,
  isFailure: Schema.Boolean,
  /** Stopped at what the approval threshold allows while it ran: the run asks before running it again. Optional: results journaled before it have none. */
  stopped: Schema.optionalWith(Schema.Boolean, { default: () => false })
})
export type ToolResult = typeof ToolResult.Type

/** An earlier exchange of the run's conversation, given to the model before the run's own prompt. */
export const Exchange = Schema.Struct({ prompt: Schema.String, answer: Schema.String })

export const RunStart = Schema.Struct({
  prompt: Schema.String,
  connectionName: Schema.NullOr(Schema.String),
  maxTurns: Schema.Int,
  // Optional: a run journaled before conversations existed resumes with none.
  history: Schema.optionalWith(Schema.Array(Exchange), { default: () => [] }),
  // Optional: a run journaled before it existed may ask, as every run could then.
  interactive: Schema.optionalWith(Schema.Boolean, { default: () => true })
})

/** A tool call's estimated query cost (null: none, or unknown), and whether it must wait for the user's approval before it runs. */
export const CostCheck = Schema.Struct({ estimatedUsd: Schema.NullOr(Schema.Number), needsApproval: Schema.Boolean })

/** The tool a run asks its user a question with; the answer comes back as the tool's result. */
export const ASK_USER = "ask_user"

export const AgentRunWorkflow = Workflow.make({
  name: "AgentRun",
  payload: { runId: Schema.String, orgId: Schema.String },
  error: RunStopped,
  idempotencyKey: ({ runId }) => runId
})

/** Starts a run's job; idempotent (the run's id is the job's key), so starting it again is harmless. */
export const startAgentRun = (payload: { readonly runId: string; readonly orgId: string }) => AgentRunWorkflow.execute(payload, { discard: true })

/** Agent runs as the job kit knows them: a run still queued has not begun. */
export const AgentRunKind = Effect.map(AgentRunsRepo, (repo) =>
  jobKind({
    name: "agent run",
    unbegun: repo.unbegun,
    start: (row) => startAgentRun({ runId: row.id, orgId: row.org_id }),
    giveUp: repo.giveUpUnbegun
  })
)

/** What the user decided at the `step` a run waits at: an answer to its question, a query approved or declined, or the run cancelled. */
export const Decision = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("answer"), text: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("approve", "decline") }),
  Schema.Struct({ kind: Schema.Literal("cancelled") })
)
export type Decision = typeof Decision.Type
export const decisionFor = (step: string) => DurableDeferred.make(`decision/${step}`, { success: Decision })

