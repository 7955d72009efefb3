import { Workflow } from "@effect/workflow"
import { Effect, Schema } from "effect"
import { EvalRunsRepo } from "../repos/EvalRunsRepo"
import { jobKind } from "./JobKind"

// The evaluation run's workflow as starters and runners both know it; its steps are in actors/jobs/evalRun/, its body in EvalRunJob.

/** A run ended early: its lease was taken over by the reaper, or a step failed in a way no task can help with. Its status is written before this is raised. */
export class EvalRunStopped extends Schema.TaggedError<EvalRunStopped>()("EvalRunStopped", {
  status: Schema.Literal("failed", "cancelled"),
  code: Schema.String,
  message: Schema.String
}) {}

/** What a task's phases before grading found: the agent's run, and why the task cannot be graded, if it cannot. */
export const TaskOutcome = Schema.Struct({ agentRunId: Schema.NullOr(Schema.String), failure: Schema.NullOr(Schema.String) })
export type TaskOutcome = typeof TaskOutcome.Type

export const EvalRunWorkflow = Workflow.make({
  name: "EvalRun",
  payload: { runId: Schema.String, orgId: Schema.String },
  error: EvalRunStopped,
  idempotencyKey: ({ runId }) => runId
})

/** Starts a run's job; idempotent (the run's id is the job's key). */
export const startEvalRun = (payload: { readonly runId: string; readonly orgId: string }) => EvalRunWorkflow.execute(payload, { discard: true })

/** Evaluation runs as the job kit knows them: a run still queued has not begun. */
export const EvalRunKind = Effect.map(EvalRunsRepo, (repo) =>
  jobKind({
    name: "eval run",
    unbegun: repo.unbegun,
    start: (row) => startEvalRun({ runId: row.id, orgId: row.org_id }),
    giveUp: repo.giveUpUnbegun
  })
)
