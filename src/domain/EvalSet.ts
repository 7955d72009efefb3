import { Schema } from "effect"
import { noNul } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

const Name = (what: string) => Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/, { message: () => `${what} must be 1-64 letters, digits, _ or -` }))
const Text = (field: string, max: number) =>
  Schema.String.pipe(
    Schema.minLength(1, { message: () => `${field} is required` }),
    Schema.maxLength(max, { message: () => `${field} must be at most ${max} characters` }),
    noNul(field)
  )
/** A file of the set, relative to its folder: no absolute path, no `..`, no backslash (the set is read from git or a zip, never the gateway's disk). */
export const SetPath = Schema.String.pipe(
  Schema.pattern(/^(?!.*(?:^|\/)\.\.?(?:\/|$))(?=.{1,256}$)[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*$/, {
    message: () => "a path inside the eval set: letters, digits, _ . - and /, not absolute, no . or .. segments"
  })
)
const NonNegative = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())
const ModelName = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.-]{1,256}$/, { message: () => "a model name: letters, digits, _ . -" }))

export const ToleranceSpec = Schema.Struct({ abs: Schema.optional(NonNegative), rel: Schema.optional(NonNegative) }).annotations(strict)
export type ToleranceSpec = typeof ToleranceSpec.Type

const CellValue = Schema.Union(Schema.String.pipe(Schema.maxLength(10_000)), Schema.Number.pipe(Schema.finite()), Schema.Boolean, Schema.Null)
export const GoldTable = Schema.Struct({
  columns: Schema.Array(Schema.String.pipe(Schema.maxLength(256))).pipe(Schema.minItems(1), Schema.maxItems(100)),
  rows: Schema.Array(Schema.Array(CellValue).pipe(Schema.maxItems(100))).pipe(Schema.maxItems(10_000))
}).annotations(strict)
export type GoldTable = typeof GoldTable.Type

const common = {
  /** Unique within its task; how the check is named in verdicts and evidence. */
  name: Name("a check's name"),
  /** The score (0–1) at which the check passes; 1 unless set. */
  pass_mark: Schema.optional(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1), Schema.annotations({ message: () => "pass_mark is a score above 0 and at most 1" })))
}

/** The answer states the gold number (or numbers): exactly as many candidates as gold values. */
export const NumberCheck = Schema.Struct({
  ...common,
  type: Schema.Literal("number"),
  gold: Schema.Union(Schema.Number.pipe(Schema.finite()), Schema.Array(Schema.Number.pipe(Schema.finite())).pipe(Schema.minItems(1), Schema.maxItems(100))),
  ordered: Schema.optional(Schema.Boolean),
  /** The gold values are in percent (42 for 42 %): an answer's "42%" then reads as 42, not 0.42. */
  unit: Schema.optional(Schema.Literal("percent")),
  tolerance: Schema.optional(ToleranceSpec)
}).annotations(strict)

/** The answer's table (its last query result, or a table in its text) against a gold table given inline, as a CSV file of the set, or as SQL run when the task is captured. */
export const TableCheck = Schema.Struct({
  ...common,
  type: Schema.Literal("table"),
  gold: Schema.optional(GoldTable),
  gold_csv: Schema.optional(SetPath),
  gold_sql: Schema.optional(Text("gold_sql", 100_000)),
  source: Schema.optional(Schema.Literal("last_result", "answer")),
  columns: Schema.optional(Schema.Array(Schema.String.pipe(Schema.maxLength(256))).pipe(Schema.minItems(1), Schema.maxItems(100))),
  extra_columns: Schema.optional(Schema.Literal("allow", "refuse")),
  row_order: Schema.optional(Schema.Literal("ignore", "match")),
  nulls: Schema.optional(Schema.Literal("distinct", "same_as_empty")),
  case: Schema.optional(Schema.Literal("sensitive", "insensitive")),
  tolerance: Schema.optional(ToleranceSpec)
})
  .annotations(strict)
  .pipe(
    Schema.filter((check) => [check.gold, check.gold_csv, check.gold_sql].filter((g) => g !== undefined).length === 1 || "a table check has exactly one of gold, gold_csv, gold_sql")
  )

export const ExistsCheck = Schema.Struct({ ...common, type: Schema.Literal("exists"), model: ModelName }).annotations(strict)
export const RowCountCheck = Schema.Struct({
  ...common,
  type: Schema.Literal("row_count"),
  model: ModelName,
  equals: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  min: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  max: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  tolerance: Schema.optional(ToleranceSpec)
})
  .annotations(strict)
  .pipe(Schema.filter((check) => check.equals !== undefined || check.min !== undefined || check.max !== undefined || "a row_count check needs equals, min or max"))
/** No two rows share the grain columns' values. */
export const GrainCheck = Schema.Struct({
  ...common,
  type: Schema.Literal("grain"),
  model: ModelName,
  columns: Schema.Array(Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_$]{0,62}$/, { message: () => "a column name" }))).pipe(Schema.minItems(1), Schema.maxItems(20))
}).annotations(strict)
export const ColumnsCheck = Schema.Struct({
  ...common,
  type: Schema.Literal("columns"),
  model: ModelName,
  required: Schema.Array(Schema.String.pipe(Schema.maxLength(63))).pipe(Schema.minItems(1), Schema.maxItems(200)),
  /** The model has exactly these columns, no others. */
  exact: Schema.optional(Schema.Boolean)
}).annotations(strict)
/** A column's sum within a tolerance band of the gold value. */
export const SumCheck = Schema.Struct({
  ...common,
  type: Schema.Literal("sum"),
  model: ModelName,
  column: Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_$]{0,62}$/, { message: () => "a column name" })),
  gold: Schema.Number.pipe(Schema.finite()),
  tolerance: Schema.optional(ToleranceSpec)
}).annotations(strict)

export const Check = Schema.Union(NumberCheck, TableCheck, ExistsCheck, RowCountCheck, GrainCheck, ColumnsCheck, SumCheck)
export type Check = typeof Check.Type

export const TaskClass = Schema.Literal("read", "write")
/** What the capture phase keeps of a write task's models: their fingerprint only, a sample of rows, or whole tables. */
export const CaptureMode = Schema.Literal("fingerprint", "sample", "full")

const STRUCTURAL = new Set(["exists", "row_count", "grain", "columns", "sum"])

export const EvalTask = Schema.Struct({
  id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.-]{1,64}$/, { message: () => "a task id must be 1-64 letters, digits, _ . or -" })),
  class: TaskClass,
  prompt: Text("prompt", 20_000),
  covers: Schema.optional(Schema.Array(ModelName).pipe(Schema.maxItems(200))),
  builds: Schema.optional(Schema.Array(ModelName).pipe(Schema.maxItems(200))),
  checks: Schema.Array(Check).pipe(Schema.maxItems(50)),
  setup: Schema.optional(SetPath),
  teardown: Schema.optional(SetPath),
  capture: Schema.optional(CaptureMode),
  timeout_seconds: Schema.optional(Schema.Int.pipe(Schema.between(10, 3600)))
})
  .annotations(strict)
  .pipe(
    Schema.filter((task) => {
      const names = task.checks.map((c) => c.name)
      if (new Set(names).size !== names.length) return `task ${task.id}: two checks share a name`
      if (task.class === "read" && task.checks.some((c) => STRUCTURAL.has(c.type))) return `task ${task.id}: structural checks (exists, row_count, grain, columns, sum) grade write tasks`
      if (task.class === "write" && task.checks.some((c) => !STRUCTURAL.has(c.type))) return `task ${task.id}: a write task is graded by structural checks on the models it builds`
      return true
    })
  )
export type EvalTask = typeof EvalTask.Type

export const EvalSetManifest = Schema.Struct({
  name: Name("the eval set's name"),
  description: Schema.optional(Text("description", 4000)),
  /** The Sluice dbt project (by name) whose models the set covers: the coverage denominator. */
  dbt_project: Schema.optional(Name("dbt_project")),
  /** The warehouse's build fingerprint the gold values were computed on; a run refuses a warehouse that differs. */
  build_fingerprint: Schema.optional(Schema.String.pipe(Schema.pattern(/^sha256:[0-9a-f]{64}$/, { message: () => "build_fingerprint is sha256:<64 hex>, as a run reports it" }))),
  defaults: Schema.optional(
    Schema.Struct({
      tolerance: Schema.optional(ToleranceSpec),
      capture: Schema.optional(CaptureMode),
      timeout_seconds: Schema.optional(Schema.Int.pipe(Schema.between(10, 3600)))
    }).annotations(strict)
  ),
  tasks: Schema.Array(EvalTask).pipe(Schema.minItems(1, { message: () => "an eval set has at least one task" }), Schema.maxItems(2000))
})
  .annotations(strict)
  .pipe(
    Schema.filter((set) => {
      const ids = set.tasks.map((t) => t.id)
      const twice = ids.find((id, i) => ids.indexOf(id) !== i)
      return twice === undefined || `two tasks share the id ${twice}`
    })
  )
export type EvalSetManifest = typeof EvalSetManifest.Type

/** An eval set's files as a commit or an archive holds them (nothing is checked out or extracted). */
export interface SetFiles {
  /** Every entry of the set, relative to its folder; `regular` is false for symbolic links, submodules and other non-files. */
  readonly list: () => Promise<ReadonlyArray<{ readonly path: string; readonly regular: boolean }>>
  /** The file's text, or null when it is missing or larger than `maxBytes`. */
  readonly read: (path: string, maxBytes: number) => Promise<string | null>
}

/** Why a set's files cannot be used (not an archive, damaged, two entries of one name): told to the caller as it is. */
export class SetFilesRefusal extends Error {}

/** The files a set's manifest may be in, first found wins. */
export const MANIFEST_FILES = ["eval.yaml", "eval.yml", "eval.json"] as const

