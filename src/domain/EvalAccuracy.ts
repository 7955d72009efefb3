import { Schema } from "effect"
import { EvalCoverage } from "./EvalCoverage"
import { RegressionCheck } from "./EvalRegression"
import { Verdict } from "./EvalRun"

/** One task's outcome as its run's record keeps it. */
export const RecordedTask = Schema.Struct({
  task_id: Schema.String,
  /** Its attempts graded (UNGRADED is none), and how many of them CORRECT. */
  attempts: Schema.Int,
  correct: Schema.Int,
  /** CORRECT when most of its graded attempts were; else the verdict its other attempts had most (the worst of equals); null when none was graded. */
  verdict: Schema.NullOr(Verdict)
})
export type RecordedTask = typeof RecordedTask.Type

/** What differs in a run from the newest comparable run before it. */
export const RunChange = Schema.Struct({
  kind: Schema.Literal("knowledge_added", "knowledge_removed", "knowledge_edited", "model", "prompt_preamble", "connection", "max_tasks", "attempts"),
  detail: Schema.String
})
export type RunChange = typeof RunChange.Type

/** A finished run's permanent record: never pruned. */
export const AccuracyRecord = Schema.Struct({
  run_id: Schema.String,
  finished_at: Schema.Date,
  eval_set_ref: Schema.String,
  build_fingerprint: Schema.String,
  /** A digest of the task ids it ran: runs are comparable when they ran the same tasks. */
  task_set: Schema.String,
  trigger: Schema.String,
  /** CORRECT over graded tasks, 0–1; null when none was graded. */
  accuracy: Schema.NullOr(Schema.Number),
  /** Its coverage of the set's dbt project; null for a set that names none. */
  coverage: Schema.NullOr(EvalCoverage),
  /** The knowledge entries live during the run, as `<id>@<version>`, the run's overlay included. */
  knowledge: Schema.Array(Schema.String),
  model: Schema.NullOr(Schema.String),
  preamble_sha256: Schema.String,
  connection_name: Schema.String,
  max_tasks: Schema.Int,
  attempts: Schema.Int,
  tasks: Schema.Array(RecordedTask),
  /** How it compared with the trailing comparable runs; null when there were none. */
  comparison: Schema.NullOr(RegressionCheck),
  /** What changed since the newest of them. */
  changes: Schema.Array(RunChange),
  regressed: Schema.Boolean
})
export type AccuracyRecord = typeof AccuracyRecord.Type

export const AccuracyHistory = Schema.Struct({
  items: Schema.Array(AccuracyRecord),
  next_cursor: Schema.NullOr(Schema.String),
  /** The regressions detected, newest first (at most REGRESSIONS_LISTED). */
  regressions: Schema.Array(AccuracyRecord)
})
export const REGRESSIONS_LISTED = 100

/** The parts of a run that may explain a change in its accuracy. */
export interface RunCircumstances {
  readonly knowledge: ReadonlyArray<string>
  readonly model: string | null
  readonly preamble_sha256: string
  readonly connection_name: string
  readonly max_tasks: number
  readonly attempts: number
}

const entryOf = (versioned: string) => {
  const at = versioned.lastIndexOf("@")
  return at < 0 ? { id: versioned, version: "" } : { id: versioned.slice(0, at), version: versioned.slice(at + 1) }
}

const WORST_FIRST = ["ERROR", "WRONG", "PARTIAL"] as const

/** A task's outcome from the verdicts of its attempts. */
export const taskOutcome = (taskId: string, verdicts: ReadonlyArray<typeof Verdict.Type | null>): RecordedTask => {
  const graded = verdicts.filter((verdict) => verdict !== null && verdict !== "UNGRADED")
  const correct = graded.filter((verdict) => verdict === "CORRECT").length
  const count = (verdict: string) => graded.filter((other) => other === verdict).length
  const verdict =
    graded.length === 0
      ? (verdicts.find((v) => v !== null) ?? null)
      : correct * 2 > graded.length
        ? "CORRECT"
        : WORST_FIRST.reduce<(typeof WORST_FIRST)[number]>((most, next) => (count(next) > count(most) ? next : most), "ERROR")
  return { task_id: taskId, attempts: graded.length, correct, verdict }
}

/** What changed from `before` to `now`: knowledge entries added, removed or edited, and each setting that differs. */
export const changesBetween = (before: RunCircumstances, now: RunCircumstances): Array<RunChange> => {
  const versions = (entries: ReadonlyArray<string>) => new Map(entries.map((entry) => [entryOf(entry).id, entryOf(entry).version]))
  const was = versions(before.knowledge)
  const is = versions(now.knowledge)
  const changes: Array<RunChange> = []
  for (const [id, version] of is) {
    const earlier = was.get(id)
    if (earlier === undefined) changes.push({ kind: "knowledge_added", detail: id })
    else if (earlier !== version) changes.push({ kind: "knowledge_edited", detail: `${id} (version ${earlier} → ${version})` })
  }
  for (const id of was.keys()) if (!is.has(id)) changes.push({ kind: "knowledge_removed", detail: id })
  if (before.model !== now.model) changes.push({ kind: "model", detail: `${before.model ?? "the default"} → ${now.model ?? "the default"}` })
  if (before.preamble_sha256 !== now.preamble_sha256) changes.push({ kind: "prompt_preamble", detail: "the prompt preamble changed" })
  if (before.connection_name !== now.connection_name) changes.push({ kind: "connection", detail: `${before.connection_name} → ${now.connection_name}` })
  if (before.max_tasks !== now.max_tasks) changes.push({ kind: "max_tasks", detail: `${before.max_tasks} → ${now.max_tasks}` })
  if (before.attempts !== now.attempts) changes.push({ kind: "attempts", detail: `${before.attempts} → ${now.attempts} per task` })
  return changes
}

const CHANGE_NAMES: Record<RunChange["kind"], string> = {
  knowledge_added: "knowledge entry added",
  knowledge_removed: "knowledge entry removed",
  knowledge_edited: "knowledge entry edited",
  model: "model",
  prompt_preamble: "prompt preamble",
  connection: "connection",
  max_tasks: "task cap",
  attempts: "attempts per task"
}
const figure = (points: number) => `${Math.round(points * 10) / 10}`

/**
 * The email a regression sends to the run's notify addresses. One knowledge entry added and nothing
 * else changed: the entry caused it. Anything else changed: the regression coincided with those
 * changes, listed. Nothing changed: it says so. Then the figures, and the tasks not CORRECT.
 */
export const regressionEmail = (record: AccuracyRecord): { readonly subject: string; readonly text: string } | null => {
  const comparison = record.comparison
  if (comparison === null || comparison.regression === null) return null
  const since = comparison.baseline_run_ids[0]!
  const [only] = record.changes
  const cause =
    record.changes.length === 1 && only!.kind === "knowledge_added"
      ? [`The knowledge entry ${only!.detail} caused this regression: it was added after the last comparable run (${since}), and nothing else changed.`]
      : record.changes.length > 0
        ? [`The regression coincided with these changes since the last comparable run (${since}):`, ...record.changes.map((change) => `  - ${CHANGE_NAMES[change.kind]}: ${change.detail}`)]
        : [`Nothing changed since the last comparable run (${since}): the same knowledge, model, prompt preamble, connection and task cap.`]
  const broke = comparison.flipped.filter((task) => task.change === "broke").map((task) => task.task_id)
  const fixed = comparison.flipped.filter((task) => task.change === "fixed").map((task) => task.task_id)
  const notCorrect = record.tasks.filter((task) => task.verdict !== "CORRECT").map((task) => `  - ${task.task_id}: ${task.verdict ?? "not graded"}`)
  const text = [
    `Evaluation run ${record.run_id} of ${record.eval_set_ref} scored ${figure(comparison.accuracy)} %, ${figure(comparison.drop)} points below the median of its comparable runs (${figure(comparison.baseline)} %, runs ${comparison.baseline_run_ids.join(", ")}; build fingerprint ${record.build_fingerprint}).`,
    "",
    ...cause,
    "",
    `Tasks that broke: ${broke.length === 0 ? "none" : broke.join(", ")}. Tasks that were fixed: ${fixed.length === 0 ? "none" : fixed.join(", ")}.`,
    `McNemar p on the paired verdicts: ${comparison.mcnemar_p.toPrecision(2)}. Chance that the tasks that passed before failed this much by noise alone: ${comparison.evidence_p.toPrecision(2)}.`,
    `Flaky tasks (their verdict already changed between earlier comparable runs): ${comparison.flaky.length === 0 ? "none" : comparison.flaky.join(", ")}.`,
    "",
    notCorrect.length === 0 ? "Every task's verdict was CORRECT." : "Tasks whose verdict was not CORRECT:",
    ...notCorrect
  ].join("\n")
  return { subject: `Evaluation regression: ${record.eval_set_ref} dropped ${figure(comparison.drop)} points`, text }
}
