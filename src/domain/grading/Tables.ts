import { DEFAULT_TOLERANCE, type Tolerance, withinTolerance } from "./Numbers"

export type Cell = string | number | boolean | null
export interface Table {
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<Cell>>
}

/** How an answer's table is held against the gold one (Spider 2.0's column matching, with its choices made explicit). */
export interface TablePolicy {
  /** Gold columns to check (all when absent): Spider 2.0's condition columns. */
  readonly columns?: ReadonlyArray<string>
  /** Columns of the answer beyond the checked ones: allowed (Spider 2.0) or refused. */
  readonly extra_columns: "allow" | "refuse"
  /** Whether rows must come in the gold order; when ignored, rows still match whole (not column by column). */
  readonly row_order: "ignore" | "match"
  /** NULL equals only NULL, or also an empty string. */
  readonly nulls: "distinct" | "same_as_empty"
  readonly case: "sensitive" | "insensitive"
  readonly tolerance: Tolerance
}

export const DEFAULT_TABLE_POLICY: TablePolicy = {
  extra_columns: "allow",
  row_order: "ignore",
  nulls: "distinct",
  case: "sensitive",
  tolerance: DEFAULT_TOLERANCE
}

type Value = null | number | string

const NUMERIC = /^([-−+]?)([$€£¥]?)([-−]?)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)([eE][-+]?\d+)?$/
const MIDNIGHT = /^(\d{4}-\d{2}-\d{2})(?:[T ]00:00(?::00(?:\.0+)?)?(?:Z|[+-]00(?::?00)?)?)$/

/** One cell as the grader compares it: numbers however written are numbers, a midnight timestamp is its date. */
export const canonicalCell = (cell: Cell | undefined, policy: Pick<TablePolicy, "nulls" | "case">): Value => {
  if (cell === null || cell === undefined) return null
  if (typeof cell === "number") return Number.isFinite(cell) ? cell : String(cell)
  if (typeof cell === "boolean") return String(cell)
  const text = cell.trim().replace(/^\*\*(.*)\*\*$/, "$1").replace(/^`(.*)`$/, "$1").trim()
  if (text === "" && policy.nulls === "same_as_empty") return null
  const numeric = NUMERIC.exec(text)
  if (numeric !== null) {
    const [, sign1 = "", , sign2 = "", digits = "", exponent = ""] = numeric
    const negative = /[-−]/.test(sign1) !== /[-−]/.test(sign2)
    return Number(digits.replace(/,/g, "") + exponent) * (negative ? -1 : 1)
  }
  const date = MIDNIGHT.exec(text)
  if (date !== null) return date[1]!
  return policy.case === "insensitive" ? text.toLowerCase() : text
}

const same = (a: Value, b: Value, tolerance: Tolerance) => {
  if (a === null || b === null) return a === b
  if (typeof a === "number" && typeof b === "number") return withinTolerance(a, b, tolerance)
  return a === b
}
const rank = (v: Value) => (v === null ? 0 : typeof v === "number" ? 1 : 2)
const order = (a: Value, b: Value) => rank(a) - rank(b) || (typeof a === "number" && typeof b === "number" ? a - b : String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0)
const orderRows = (a: ReadonlyArray<Value>, b: ReadonlyArray<Value>) => {
  for (let i = 0; i < a.length; i++) {
    const c = order(a[i]!, b[i]!)
    if (c !== 0) return c
  }
  return 0
}

const sameList = (a: ReadonlyArray<Value>, b: ReadonlyArray<Value>, tolerance: Tolerance) => a.length === b.length && a.every((v, i) => same(v, b[i]!, tolerance))

export interface TableGrade {
  readonly score: number
  readonly detail: string
}

// Search budget for an assignment of columns whose rows agree when order is ignored; running out only under-credits.
const SEARCH_BUDGET = 20_000

/**
 * Grades an answer's table against the gold one. Every checked gold column must be matched by a
 * column of its own in the answer (one answer column never stands for two), and the rows must agree
 * over all matched columns together. Partial credit counts columns matched one by one; only a whole,
 * consistent match scores 1.
 */
export const gradeTable = (answer: Table, gold: Table, policy: TablePolicy = DEFAULT_TABLE_POLICY): TableGrade => {
  const checked = policy.columns === undefined ? gold.columns.map((_, i) => i) : policy.columns.map((name) => gold.columns.findIndex((c) => c.toLowerCase() === name.toLowerCase()))
  const missing = policy.columns?.filter((_, i) => checked[i]! < 0) ?? []
  if (missing.length > 0) throw new Error(`the gold table has no column ${missing.join(", ")}`)
  if (checked.length === 0) throw new Error("the check names no gold column")
  if (answer.rows.length !== gold.rows.length) return { score: 0, detail: `${answer.rows.length} rows, expected ${gold.rows.length}` }
  if (policy.extra_columns === "refuse" && answer.columns.length !== checked.length) {
    return { score: 0, detail: `${answer.columns.length} columns, expected exactly ${checked.length}` }
  }
  const column = (table: Table, index: number) => table.rows.map((row) => canonicalCell(row[index], policy))
  const goldColumns = checked.map((i) => column(gold, i))
  const answerColumns = answer.columns.map((_, i) => column(answer, i))
  const ignoreOrder = policy.row_order === "ignore"
  const sortedGold = ignoreOrder ? goldColumns.map((c) => [...c].sort(order)) : goldColumns
  const sortedAnswer = ignoreOrder ? answerColumns.map((c) => [...c].sort(order)) : answerColumns
  const candidates = sortedGold.map((g) => sortedAnswer.flatMap((a, i) => (sameList(g, a, policy.tolerance) ? [i] : [])))

  const matched = maximumMatching(candidates)
  const names = (indexes: ReadonlyArray<number>) => indexes.map((i) => gold.columns[checked[i]!]).join(", ")
  const unmatched = candidates.flatMap((_, i) => (matched.has(i) ? [] : [i]))
  if (unmatched.length > 0) {
    return { score: matched.size / checked.length, detail: `no column of the answer matches ${names(unmatched)}` }
  }
  if (!ignoreOrder) return { score: 1, detail: `all ${checked.length} columns match in order` }
  if (consistentAssignment(candidates, goldColumns, answerColumns, policy.tolerance)) return { score: 1, detail: `all ${checked.length} columns match, rows whole` }
  return { score: (checked.length - 1) / checked.length, detail: "each column matches on its own, but the rows do not: values are paired differently" }
}

/** Kuhn's augmenting paths: gold column → answer column, each answer column used once. */
const maximumMatching = (candidates: ReadonlyArray<ReadonlyArray<number>>): Map<number, number> => {
  const owner = new Map<number, number>()
  const tryColumn = (g: number, seen: Set<number>): boolean => {
    for (const a of candidates[g]!) {
      if (seen.has(a)) continue
      seen.add(a)
      const current = owner.get(a)
      if (current === undefined || tryColumn(current, seen)) {
        owner.set(a, g)
        return true
      }
    }
    return false
  }
  candidates.forEach((_, g) => tryColumn(g, new Set()))
  return new Map([...owner].map(([a, g]) => [g, a]))
}

/** Whether some one-to-one assignment of the candidates makes the rows agree as a whole (as multisets of rows). */
const consistentAssignment = (candidates: ReadonlyArray<ReadonlyArray<number>>, gold: ReadonlyArray<ReadonlyArray<Value>>, answer: ReadonlyArray<ReadonlyArray<Value>>, tolerance: Tolerance) => {
  const rowsOf = (columns: ReadonlyArray<ReadonlyArray<Value>>) => (columns[0] ?? []).map((_, r) => columns.map((c) => c[r]!)).sort(orderRows)
  const goldRows = rowsOf(gold)
  const byFewest = candidates.map((c, g) => ({ g, c })).sort((x, y) => x.c.length - y.c.length)
  const chosen = new Array<number>(candidates.length)
  const used = new Set<number>()
  let budget = SEARCH_BUDGET
  const search = (k: number): boolean => {
    if (--budget < 0) return false
    if (k === byFewest.length) {
      const answerRows = rowsOf(chosen.map((a) => answer[a]!))
      return goldRows.every((row, r) => sameList(row, answerRows[r]!, tolerance))
    }
    const { g, c } = byFewest[k]!
    for (const a of c) {
      if (used.has(a)) continue
      used.add(a)
      chosen[g] = a
      if (search(k + 1)) return true
      used.delete(a)
    }
    return false
  }
  return search(0)
}

const SEPARATOR = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/
const cellsOf = (line: string) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim())

/** The first pipe table of a Markdown text (header, separator, rows; an empty cell is NULL), or null. */
export const markdownTable = (text: string): Table | null => {
  const lines = text.split(/\r?\n/)
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i]!.includes("|") || !SEPARATOR.test(lines[i + 1]!)) continue
    const columns = cellsOf(lines[i]!)
    const rows: Array<Array<Cell>> = []
    for (let j = i + 2; j < lines.length && lines[j]!.includes("|"); j++) {
      const cells = cellsOf(lines[j]!)
      // An empty cell is how Markdown writes NULL.
      rows.push(columns.map((_, k) => (cells[k] === undefined || cells[k] === "" ? null : cells[k]!)))
    }
    return { columns, rows }
  }
  return null
}
