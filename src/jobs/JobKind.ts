import type { SqlError } from "@effect/sql/SqlError"
import type { WorkflowEngine } from "@effect/workflow"
import { Effect } from "effect"

/** How long after its row commits a job that has not begun is taken for one whose start was lost, and started. */
export const START_GRACE_SECONDS = 3
const STARTS_PER_LOOK = 100

/**
 * A kind of durable job as the job kit runs it. A job is a row in the kind's table and a workflow
 * keyed by the row's id: the row commits first, then the workflow starts. A process that dies in
 * between leaves a row whose workflow never started; the job starter (actors/jobs/JobStarter)
 * finds such rows and starts them, so a job starts if and only if its row commits. Starting a job
 * twice is harmless: the workflow's idempotency key is the row's id.
 */
export interface JobKind {
  readonly name: string
  /** Starts the jobs of this kind that have not begun `graceSeconds` after their row committed; how many it started. */
  readonly startUnbegun: (graceSeconds: number) => Effect.Effect<number, SqlError, WorkflowEngine.WorkflowEngine>
}

export const jobKind = <Payload>(kind: {
  readonly name: string
  /** Jobs whose row committed at least `graceSeconds` ago and whose first step has not run, oldest first. */
  readonly unbegun: (graceSeconds: number, limit: number) => Effect.Effect<ReadonlyArray<Payload>, SqlError>
  readonly start: (payload: Payload) => Effect.Effect<unknown, never, WorkflowEngine.WorkflowEngine>
}): JobKind => ({
  name: kind.name,
  startUnbegun: (graceSeconds) =>
    Effect.flatMap(kind.unbegun(graceSeconds, STARTS_PER_LOOK), (jobs) => Effect.as(Effect.forEach(jobs, kind.start, { discard: true }), jobs.length))
})
