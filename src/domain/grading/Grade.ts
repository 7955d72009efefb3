import type { Check, EvalTask, ToleranceSpec } from "../EvalSet"
import { gradeNumbers, type Tolerance, toleranceFor, withinTolerance } from "./Numbers"
import { DEFAULT_TABLE_POLICY, gradeTable, markdownTable, type Table } from "./Tables"

export type Verdict = "CORRECT" | "PARTIAL" | "WRONG" | "ERROR" | "UNGRADED"

/** What the capture phase recorded of one model a write task built (read by the structural checks). */
export interface ModelCapture {
  readonly exists: boolean
  readonly row_count: number | null
  readonly columns: ReadonlyArray<{ readonly name: string; readonly type: string }>
  /** By grain (its columns joined with ","): rows sharing a key with another row, and rows with a NULL in the key. */
  readonly grains: Readonly<Record<string, { readonly duplicates: number; readonly null_keys: number }>>
  /** By column: its sum, or null when it has no numeric sum. */
  readonly sums: Readonly<Record<string, number | null>>
}

/** Everything grading reads: it reads nothing else, so a stored task is graded again to the same verdicts. */
export interface TaskEvidence {
  readonly question: string
  /** The agent's final answer, or null if it gave none. */
  readonly answer: string | null
  /** The last result the agent's queries returned. */
  readonly last_result: Table | null
  /** Gold tables of table checks, by check name, as resolved when the task was captured (inline, CSV file or SQL). */
  readonly gold_tables: Readonly<Record<string, Table>>
  /** Models by name (the last dotted segment, lowercased). */
  readonly models: Readonly<Record<string, ModelCapture>>
  /** Why a phase before grading failed (setup, agent, capture): the task is ERROR, never counted as an answer. */
  readonly failure: string | null
}

export interface CheckResult {
  readonly name: string
  readonly type: Check["type"]
  /** 0–1; null when the check could not be graded. */
  readonly score: number | null
  readonly passed: boolean
  readonly pass_mark: number
  readonly detail: string
}

export interface TaskGrade {
  readonly verdict: Verdict
  readonly checks: ReadonlyArray<CheckResult>
  readonly detail: string
}

export const modelKey = (name: string) => name.split(".").pop()!.replace(/^"|"$/g, "").toLowerCase()

// With exactOptionalPropertyTypes an absent option is left out, never set to undefined.
const optional = <K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } => (value === undefined ? {} : ({ [key]: value } as { [P in K]: V }))

// Evidence is JSON read back from storage: only its own keys count (a check named "constructor" finds nothing).
const own = <V>(record: Readonly<Record<string, V>>, key: string): V | undefined => (Object.hasOwn(record, key) ? record[key] : undefined)

/** The check's tolerance, else the set's default; none: integers exact, other numbers within DEFAULT_TOLERANCE. */
const toleranceOf = (spec: ToleranceSpec | undefined, fallback: Tolerance | undefined): Tolerance | undefined =>
  spec === undefined ? fallback : { abs: spec.abs ?? 0, rel: spec.rel ?? 0 }

type Scored = { readonly score: number; readonly detail: string }

const gradeOne = (check: Check, evidence: TaskEvidence, fallback: Tolerance | undefined): Scored => {
  const model = "model" in check ? own(evidence.models, modelKey(check.model)) : undefined
  const built = (name: string): ModelCapture => {
    if (model === undefined) throw new Error(`the capture holds nothing of ${name}`)
    return model
  }
  switch (check.type) {
    case "number":
      if (evidence.answer === null) return { score: 0, detail: "the agent gave no answer" }
      return gradeNumbers(evidence.answer, check.gold, {
        ...optional("tolerance", toleranceOf(check.tolerance, fallback)),
        ...optional("unit", check.unit),
        ordered: check.ordered === true,
        question: evidence.question
      })
    case "table": {
      const gold = own(evidence.gold_tables, check.name)
      if (gold === undefined) throw new Error("the gold table was not captured")
      // An agent that gave up has not answered, whatever its last query returned.
      if (evidence.answer === null) return { score: 0, detail: "the agent gave no answer" }
      const answer = check.source === "answer" ? markdownTable(evidence.answer) : evidence.last_result
      if (answer === null) return { score: 0, detail: check.source === "answer" ? "the answer holds no table" : "the agent ran no query that returned a result" }
      return gradeTable(answer, gold, {
        ...optional("columns", check.columns),
        extra_columns: check.extra_columns ?? DEFAULT_TABLE_POLICY.extra_columns,
        row_order: check.row_order ?? DEFAULT_TABLE_POLICY.row_order,
        nulls: check.nulls ?? DEFAULT_TABLE_POLICY.nulls,
        case: check.case ?? DEFAULT_TABLE_POLICY.case,
        ...optional("tolerance", toleranceOf(check.tolerance, fallback))
      })
    }
    case "exists": {
      const m = built(check.model)
      return m.exists ? { score: 1, detail: `${check.model} exists` } : { score: 0, detail: `${check.model} was not built` }
    }
    case "row_count": {
      const m = built(check.model)
      if (!m.exists || m.row_count === null) return { score: 0, detail: `${check.model} was not built` }
      const n = m.row_count
      const ok =
        (check.equals === undefined || withinTolerance(n, check.equals, toleranceFor(check.equals, toleranceOf(check.tolerance, undefined)))) &&
        (check.min === undefined || n >= check.min) &&
        (check.max === undefined || n <= check.max)
      return { score: ok ? 1 : 0, detail: `${n} rows${check.equals === undefined ? "" : `, expected ${check.equals}`}${check.min === undefined ? "" : `, at least ${check.min}`}${check.max === undefined ? "" : `, at most ${check.max}`}` }
    }
    case "grain": {
      const m = built(check.model)
      if (!m.exists) return { score: 0, detail: `${check.model} was not built` }
      const grain = own(m.grains, check.columns.join(","))
      if (grain === undefined) throw new Error(`the capture holds no grain ${check.columns.join(", ")} of ${check.model}`)
      const ok = grain.duplicates === 0 && grain.null_keys === 0
      return { score: ok ? 1 : 0, detail: ok ? `one row per ${check.columns.join(", ")}` : `${grain.duplicates} rows share a key, ${grain.null_keys} have a NULL in it` }
    }
    case "columns": {
      const m = built(check.model)
      if (!m.exists) return { score: 0, detail: `${check.model} was not built` }
      const have = new Set(m.columns.map((c) => c.name.toLowerCase()))
      const missing = check.required.filter((c) => !have.has(c.toLowerCase()))
      const wanted = new Set(check.required.map((c) => c.toLowerCase()))
      const extra = check.exact === true ? m.columns.filter((c) => !wanted.has(c.name.toLowerCase())).map((c) => c.name) : []
      const score = (check.required.length - missing.length) / check.required.length
      return { score: extra.length > 0 ? Math.min(score, 0.99) : score, detail: missing.length + extra.length === 0 ? "every column is there" : [missing.length > 0 ? `missing ${missing.join(", ")}` : "", extra.length > 0 ? `unexpected ${extra.join(", ")}` : ""].filter((s) => s !== "").join("; ") }
    }
    case "sum": {
      const m = built(check.model)
      if (!m.exists) return { score: 0, detail: `${check.model} was not built` }
      const column = check.column.toLowerCase()
      if (!m.columns.some((c) => c.name.toLowerCase() === column)) return { score: 0, detail: `${check.model} has no column ${check.column}` }
      const sum = own(m.sums, column)
      if (sum === undefined) throw new Error(`the capture holds no sum of ${check.column}`)
      if (sum === null) return { score: 0, detail: `${check.column} has no numeric sum` }
      const ok = withinTolerance(sum, check.gold, toleranceFor(check.gold, toleranceOf(check.tolerance, fallback)))
      return { score: ok ? 1 : 0, detail: `sum ${sum}, expected ${check.gold}` }
    }
  }
}

/**
 * A task's verdict from its evidence: ERROR when a phase failed or a check could not be graded (never
 * counted as an answer), UNGRADED with no checks, CORRECT when every check passes, WRONG when none
 * scores anything, PARTIAL between.
 */
export const gradeTask = (task: EvalTask, evidence: TaskEvidence, defaults: { readonly tolerance?: ToleranceSpec } = {}): TaskGrade => {
  const fallback = toleranceOf(defaults.tolerance, undefined)
  const checks = task.checks.map((check): CheckResult => {
    const passMark = check.pass_mark ?? 1
    try {
      const { score, detail } = gradeOne(check, evidence, fallback)
      return { name: check.name, type: check.type, score, passed: score >= passMark, pass_mark: passMark, detail }
    } catch (error) {
      return { name: check.name, type: check.type, score: null, passed: false, pass_mark: passMark, detail: error instanceof Error ? error.message : "the check could not be graded" }
    }
  })
  if (evidence.failure !== null) return { verdict: "ERROR", checks: [], detail: evidence.failure }
  if (checks.length === 0) return { verdict: "UNGRADED", checks, detail: "the task has no checks" }
  const failed = checks.filter((c) => c.score === null)
  if (failed.length > 0) return { verdict: "ERROR", checks, detail: `${failed.map((c) => c.name).join(", ")} could not be graded` }
  const passed = checks.filter((c) => c.passed).length
  if (passed === checks.length) return { verdict: "CORRECT", checks, detail: `${passed} of ${checks.length} checks passed` }
  if (checks.every((c) => c.score === 0)) return { verdict: "WRONG", checks, detail: `no check passed` }
  return { verdict: "PARTIAL", checks, detail: `${passed} of ${checks.length} checks passed` }
}
