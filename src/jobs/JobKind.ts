import type { WorkflowEngine } from "@effect/workflow"
import { Effect } from "effect"
import type { Unavailable } from "../domain/Errors"

/** How long after its row commits a job that has not begun is taken for one whose start was lost, and started. */
const START_GRACE_SECONDS = 3
/** A job not begun this long after its row committed is not started any more (its asker has moved on): it ends as not started. */
const START_GIVE_UP_SECONDS = 3600
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
  /** The jobs to start now (committed a few seconds ago or more, not begun), oldest first, each with its start. */
  readonly unbegun: Effect.Effect<ReadonlyArray<{ readonly id: string; readonly start: Effect.Effect<unknown, never, WorkflowEngine.WorkflowEngine> }>, Unavailable>
  /** Ends, as not started, the jobs not begun an hour after their row committed; how many. */
  readonly giveUp: Effect.Effect<number, Unavailable>
}

export const jobKind = <Job extends { readonly id: string }>(kind: {
  readonly name: string
  /** Jobs whose row committed between `graceSeconds` and `giveUpSeconds` ago and whose first step has not run, oldest first. */
  readonly unbegun: (graceSeconds: number, giveUpSeconds: number, limit: number) => Effect.Effect<ReadonlyArray<Job>, Unavailable>
  readonly start: (job: Job) => Effect.Effect<unknown, never, WorkflowEngine.WorkflowEngine>
  /** Ends, as not started, the jobs not begun `giveUpSeconds` after their row committed; how many. */
  readonly giveUp: (giveUpSeconds: number) => Effect.Effect<number, Unavailable>
}): JobKind => ({
  name: kind.name,
  unbegun: Effect.map(kind.unbegun(START_GRACE_SECONDS, START_GIVE_UP_SECONDS, STARTS_PER_LOOK), (jobs) => jobs.map((job) => ({ id: job.id, start: kind.start(job) }))),
  giveUp: kind.giveUp(START_GIVE_UP_SECONDS)
})
