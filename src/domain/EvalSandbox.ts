import { Schema } from "effect"
import { runBranchName } from "./EvalRun"

/** What a task's script sandbox went through, in order, as the gateway saw it (never as the script printed it). */
export const EVAL_SANDBOX_EVENT_TYPES = ["scheduled", "started", "failed_to_start", "log_cut", "oom_killed", "exited", "removed"] as const
export const EvalSandboxEventType = Schema.Literal(...EVAL_SANDBOX_EVENT_TYPES)
export type EvalSandboxEventType = typeof EvalSandboxEventType.Type

export const EvalSandboxEvent = Schema.Struct({ at: Schema.String, type: EvalSandboxEventType, message: Schema.String })
export type EvalSandboxEvent = typeof EvalSandboxEvent.Type

export const ScriptPhase = Schema.Literal("setup", "teardown")
export type ScriptPhase = typeof ScriptPhase.Type

/** An evaluation task's script sandbox on this gateway: running, or ended a short while ago. */
export const EvalSandbox = Schema.Struct({
  name: Schema.String,
  run_id: Schema.String,
  task_id: Schema.String,
  phase: ScriptPhase,
  script: Schema.String,
  status: Schema.Literal("starting", "running", "ended"),
  sandbox_id: Schema.NullOr(Schema.String),
  memory_limit_mb: Schema.Int,
  log_chars: Schema.Int,
  created_at: Schema.String,
  ended_at: Schema.NullOr(Schema.String),
  /** The last thing that happened to it: its latest event's type. */
  last_event: EvalSandboxEventType
})
export type EvalSandbox = typeof EvalSandbox.Type

/** `eval-<run>-<task>-<phase>`: its run's hex (as its branches are named), its task's id, setup or teardown. */
export const evalSandboxName = (runId: string, taskId: string, phase: ScriptPhase) => `${runBranchName(runId)}-${taskId}-${phase}`
export const EvalSandboxName = Schema.String.pipe(Schema.pattern(/^eval-[0-9a-f]{32}-[A-Za-z0-9_.-]{1,64}(?:~[2-9])?-(setup|teardown)$/, { message: () => "an evaluation sandbox's name" }))
