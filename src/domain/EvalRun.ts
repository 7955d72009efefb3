import { Schema } from "effect"
import { ConnectionName } from "./Connection"
import { Attempts, MaxTasks, NotifyEmails, PromptPreamble } from "./EvalConfig"
import { EvalCoverage } from "./EvalCoverage"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const EVAL_RUN_KIND = "eval_run"
export const MAX_DOC_IDS = 20
export const MAX_TASK_IDS = 200
/** A run's tasks times their attempts: at most 200 tasks attempted three times. */
export const MAX_TASK_ATTEMPTS = 600

/**
 * A task's attempt as a run names it: the task's id for its first, `<id>~<n>` for the others (`~`
 * is never in a task id). Keys, branches, sandboxes, evidence and routes name an attempt so.
 */
export const attemptName = (taskId: string, attempt: number) => (attempt === 1 ? taskId : `${taskId}~${attempt}`)
/** The task and attempt an attempt's name stands for. */
export const attemptOf = (name: string) => {
  const match = /^(.*)~([2-9])$/.exec(name)
  return match === null ? { taskId: name, attempt: 1 } : { taskId: match[1]!, attempt: Number(match[2]) }
}
/** A task's id, or one of its attempts' names. */
export const ATTEMPT_NAME = /^[A-Za-z0-9_.-]{1,64}(?:~[2-9])?$/

/** Runs in flight started on one gateway process; N replicas allow 2N. */
export const MAX_RUNS_IN_FLIGHT_PER_PROCESS = 2

export const EVAL_RUN_STATUSES = ["queued", "running", "completed", "failed", "cancelled"] as const
export const EvalRunStatus = Schema.Literal(...EVAL_RUN_STATUSES)
export type EvalRunStatus = typeof EvalRunStatus.Type
export const EVAL_RUN_ENDED: ReadonlySet<EvalRunStatus> = new Set(["completed", "failed", "cancelled"])

/** A task's phases in the order it goes through them; `pending` before it begins, `done` after its teardown. */
export const TASK_PHASES = ["pending", "provisioning", "setup", "agent", "grading", "capture", "teardown", "done"] as const
export const TaskPhase = Schema.Literal(...TASK_PHASES)
export type TaskPhase = typeof TaskPhase.Type

/** What started a run: a person in the web app, the API, a knowledge change (autorun), or a proposal evaluated on the live base (`doc_ids`). */
export const EvalRunTrigger = Schema.Literal("manual", "api", "knowledge_change", "evaluate_change")
export type EvalRunTrigger = typeof EvalRunTrigger.Type
/** Knowledge changes coalesce into one autorun per this many seconds. */
export const AUTORUN_COALESCE_SECONDS = 120

export const Verdict = Schema.Literal("CORRECT", "PARTIAL", "WRONG", "ERROR", "UNGRADED")

/** `POST /api/evals/runs`: what a run may change of the saved settings, within the specification's caps. */
export const StartEvalRun = Schema.Struct({
  doc_ids: Schema.optional(
    Schema.Array(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/, { message: () => "a knowledge entry's id" }))).pipe(
      Schema.maxItems(MAX_DOC_IDS, { message: () => `doc_ids lists at most ${MAX_DOC_IDS} knowledge entries` })
    )
  ),
  task_ids: Schema.optional(
    Schema.Array(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.-]{1,64}$/, { message: () => "a task id" }))).pipe(
      Schema.minItems(1, { message: () => "task_ids, when given, names at least one task" }),
      Schema.maxItems(MAX_TASK_IDS, { message: () => `task_ids lists at most ${MAX_TASK_IDS} tasks` })
    )
  ),
  max_tasks: Schema.optional(MaxTasks),
  attempts: Schema.optional(Attempts),
  prompt_preamble: Schema.optional(PromptPreamble),
  notify_emails: Schema.optional(NotifyEmails),
  connection_name: Schema.optional(ConnectionName),
  /** `manual` when a person starts it in the web app; `api` (the default) otherwise. */
  trigger: Schema.optional(Schema.Literal("manual", "api"))
}).annotations(strict)
export type StartEvalRun = typeof StartEvalRun.Type

/** What a run was started with: the saved settings, with the start's own changes applied. */
export const EvalRunSettings = Schema.Struct({
  connection_name: Schema.String,
  prompt_preamble: Schema.String,
  max_tasks: Schema.Int,
  /** How many times each task is attempted (runs before attempts: once). */
  attempts: Schema.optionalWith(Schema.Int, { default: () => 1 }),
  notify_emails: Schema.Array(Schema.String),
  doc_ids: Schema.Array(Schema.String),
  task_ids: Schema.NullOr(Schema.Array(Schema.String)),
  runner_profile: Schema.String,
  model: Schema.NullOr(Schema.String),
  /** The knowledge entries live when it started, as `<id>@<version>`, its overlay included (runs before accuracy records: none). */
  knowledge: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })
})
export type EvalRunSettings = typeof EvalRunSettings.Type

export const VerdictCounts = Schema.Struct({
  CORRECT: Schema.Int,
  PARTIAL: Schema.Int,
  WRONG: Schema.Int,
  ERROR: Schema.Int,
  UNGRADED: Schema.Int
})
export type VerdictCounts = typeof VerdictCounts.Type

export const EvalRun = Schema.Struct({
  id: Schema.String,
  status: EvalRunStatus,
  trigger: EvalRunTrigger,
  eval_set_ref: Schema.String,
  build_fingerprint: Schema.String,
  settings: EvalRunSettings,
  total: Schema.Int,
  done: Schema.Int,
  verdicts: VerdictCounts,
  /** CORRECT over every graded task (ERROR counts as not correct; UNGRADED is left out); null until one is graded. */
  accuracy: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, message: Schema.String })),
  created_by: Schema.String,
  created_at: Schema.Date,
  started_at: Schema.NullOr(Schema.Date),
  ended_at: Schema.NullOr(Schema.Date),
  lease_expires_at: Schema.NullOr(Schema.Date),
  /** What retention deleted of its evidence: its tasks' files but transcripts (past the newest 10 ended runs), or those too (past 100). */
  evidence_pruned: Schema.NullOr(Schema.Literal("artifacts", "transcripts")),
  /** Its coverage of its set's dbt project, once it completed; null for a set that names no project. */
  coverage: Schema.NullOr(EvalCoverage)
})
export type EvalRun = typeof EvalRun.Type

/** How many of an organization's newest ended runs keep their tasks' evidence files, and their transcripts. */
export const KEEP_ARTIFACTS_OF_RUNS = 10
export const KEEP_TRANSCRIPTS_OF_RUNS = 100

export const EvalCheckResult = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  score: Schema.NullOr(Schema.Number),
  passed: Schema.Boolean,
  pass_mark: Schema.Number,
  detail: Schema.String
})

export const EvalRunTask = Schema.Struct({
  /** The task's id, or `<id>~<n>` for its nth attempt. */
  task_id: Schema.String,
  attempt: Schema.Int,
  class: Schema.Literal("read", "write"),
  phase: TaskPhase,
  verdict: Schema.NullOr(Verdict),
  checks: Schema.Array(EvalCheckResult),
  detail: Schema.NullOr(Schema.String),
  agent_run_id: Schema.NullOr(Schema.String),
  started_at: Schema.NullOr(Schema.Date),
  ended_at: Schema.NullOr(Schema.Date)
})
export type EvalRunTask = typeof EvalRunTask.Type

export const EvalRunDetail = Schema.Struct({ ...EvalRun.fields, tasks: Schema.Array(EvalRunTask) })

export const EvalRunProgress = Schema.Struct({
  run_id: Schema.String,
  status: EvalRunStatus,
  done: Schema.Int,
  total: Schema.Int,
  active: Schema.Array(Schema.Struct({ task_id: Schema.String, phase: TaskPhase })),
  elapsed_seconds: Schema.Number
})

/** Where a run's evidence is kept in the object store. */
export const runPrefix = (orgId: string, runId: string) => `evals/${orgId}/${runId}`
// A task id may be `..`: under its own prefix it is never a path segment of its own.
export const taskEvidenceKey = (orgId: string, runId: string, taskId: string, file: string) => `${runPrefix(orgId, runId)}/tasks/task_${taskId}/${file}`
/** The files a task's evidence holds; downloads name one of these, nothing else. */
export const EVIDENCE_FILES = ["evidence.json", "transcript.json", "setup.log", "teardown.log", "captures.json"] as const

/** The names of a run's task keys: found by this prefix when the run ends, whether or not a task kept its key's id. */
export const taskKeyPrefix = (runId: string) => `eval ${runId} task `
/** A task's key, named by its place in the run (three digits: one name is never the prefix of another). */
export const taskKeyName = (runId: string, ordinal: number) => `${taskKeyPrefix(runId)}${String(ordinal).padStart(3, "0")}`

/** The branch project an evaluation's branches are made in, on its pinned connection. */
export const EVAL_BRANCH_PROJECT = "evals"
/** A run's own copy of the warehouse, which its write tasks' branches copy (no one is connected to it, so a copy never waits on a session). */
export const runBranchName = (runId: string) => `eval-${runId.replace(/^evr_/, "")}`
/** A write task's branch, by its place in the run. */
export const taskBranchName = (runId: string, ordinal: number) => `${runBranchName(runId)}-${String(ordinal).padStart(3, "0")}`
