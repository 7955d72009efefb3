import { Activity } from "@effect/workflow"
import { Effect, Schema } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import type { OrgId } from "../../src/domain/Ids"
import { EvalRunStopped, EvalRunWorkflow, TaskOutcome } from "../../src/jobs/EvalRunWorkflow"
import { JobSteps } from "../../src/jobs/JobSteps"
import { EvalRunLifecycle, LEASE_RENEWAL } from "./evalRun/EvalRunLifecycle"
import { EvalTaskSteps } from "./evalRun/EvalTaskSteps"

/**
 * An evaluation run: its tasks, up to SP_EVAL_MAX_PARALLEL_TASKS at once, each through its phases
 * as durable steps, then the run's end. After a crash the run resumes on another runner at the
 * steps it was in (done steps are not done again); the lease it renews meanwhile tells the reaper
 * it is alive.
 */
export const EvalRunJob = EvalRunWorkflow.toLayer(({ runId, orgId: org }) =>
  Effect.gen(function* () {
    const lifecycle = yield* EvalRunLifecycle
    const tasks = yield* EvalTaskSteps
    const kit = yield* JobSteps
    const config = yield* AppConfig
    const orgId = org as OrgId
    /** A named step of the run: done once to its end (JobSteps), journaled by the workflow. The name is its identity across crashes. */
    const step = <A, I>(name: string, success: Schema.Schema<A, I>, execute: Effect.Effect<A, EvalRunStopped>) =>
      Activity.make({ name, success, error: EvalRunStopped, execute: kit.once(runId, name, success, execute) })

    const renewing = lifecycle.holdLease(orgId, runId).pipe(Effect.delay(LEASE_RENEWAL), Effect.forever)
    return yield* Effect.scoped(
      Effect.gen(function* () {
        // Each time the run starts or resumes here: a run whose lease expired meanwhile ends now, and its steps do nothing.
        yield* lifecycle.holdLease(orgId, runId)
        yield* Effect.forkScoped(renewing)
        const taskIds = yield* step("begin", Schema.Array(Schema.String), lifecycle.begin(orgId, runId))
        yield* step("prepare", Schema.Void, tasks.prepare(orgId, runId, taskIds))
        yield* Effect.forEach(
          taskIds,
          (taskId) =>
            Effect.gen(function* () {
              const at = (phase: string) => `task/${taskId}/${phase}`
              const provisioned = yield* step(at("provisioning"), Schema.Boolean, tasks.provision(orgId, runId, taskId))
              const outcome = provisioned
                ? yield* step(at("agent"), TaskOutcome, tasks.agent(orgId, runId, taskId))
                : { agentRunId: null, failure: "The task's provisioning failed" }
              yield* step(at("grading"), Schema.Void, tasks.grade(orgId, runId, taskId, outcome))
              yield* step(at("capture"), Schema.Void, tasks.capture(orgId, runId, taskId, outcome))
              yield* step(at("teardown"), Schema.Void, tasks.teardown(orgId, runId, taskId))
            }),
          { concurrency: config.evalMaxParallelTasks, discard: true }
        )
        yield* step("complete", Schema.Void, lifecycle.complete(orgId, runId))
      })
    )
  })
)
