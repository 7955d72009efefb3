import { type Tolerance, toleranceFor, withinTolerance } from "./Numbers"

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
  /** The check's own tolerance; none: integers exact, other numbers within DEFAULT_TOLERANCE. */
  readonly tolerance?: Tolerance
}

export const DEFAULT_TABLE_POLICY: TablePolicy = { extra_columns: "allow", row_order: "ignore", nulls: "distinct", case: "sensitive" }

type Value = null | number | string

const NUMERIC = /^([-−+]?)([$€£¥]?)([-−]?)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)([eE][-+]?\d+)?$/
const MIDNIGHT = /^(\d{4}-\d{2}-\d{2})(?:[T ]00:00(?::00(?:\.0+)?)?(?:Z|[+-]00(?::?00)?)?)$/
// Past 15 significant digits a double no longer holds every integer: such ids compare as text.
const SIGNIFICANT_DIGITS = 15

/**
 * One cell as the grader compares it: numbers however written are numbers, except codes with a
 * leading zero (02134) and digits a double cannot hold exactly, which stay text; a midnight
 * timestamp is its date; text is compared in Unicode's composed form.
 */
export const canonicalCell = (cell: Cell | undefined, policy: Pick<TablePolicy, "nulls" | "case">): Value => {
  if (cell === null || cell === undefined) return null
  if (typeof cell === "number") return Number.isFinite(cell) ? cell : String(cell)
  if (typeof cell === "boolean") return String(cell)
  const text = cell.normalize("NFC").trim().replace(/^\*\*(.*)\*\*$/, "$1").replace(/^`(.*)`$/, "$1").trim()
  if (text === "" && policy.nulls === "same_as_empty") return null
  const numeric = NUMERIC.exec(text)
  if (numeric !== null) {
    const [, sign1 = "", , sign2 = "", digits = "", exponent = ""] = numeric
    const plain = digits.replace(/,/g, "")
    const significant = plain.replace(".", "").replace(/^0+/, "").length
    const leadingZero = /^0\d/.test(plain)
    const value = Number(plain + exponent) * (/[-−]/.test(sign1) !== /[-−]/.test(sign2) ? -1 : 1)
    if (!leadingZero && significant <= SIGNIFICANT_DIGITS && Number.isFinite(value)) return value
  }
  const date = MIDNIGHT.exec(text)
  if (date !== null) return date[1]!
  if (/^(?:true|false)$/i.test(text)) return text.toLowerCase()
  return policy.case === "insensitive" ? text.toLowerCase() : text
}

const same = (a: Value, b: Value, tolerance: Tolerance | undefined) => {
  if (a === null || b === null) return a === b
  if (typeof a === "number" && typeof b === "number") return withinTolerance(a, b, toleranceFor(b, tolerance))
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
const sameList = (a: ReadonlyArray<Value>, b: ReadonlyArray<Value>, tolerance: Tolerance | undefined) => a.length === b.length && a.every((v, i) => same(v, b[i]!, tolerance))

export interface TableGrade {
  readonly score: number
  readonly detail: string
}

// Cells the search for a consistent pairing of columns may compare before settling for what it has; running out only under-credits.
const SEARCH_WORK = 20_000_000

/**
 * Grades an answer's table against the gold one. Every checked gold column must be matched by a
 * column of its own in the answer (one answer column never stands for two), and the rows must agree
 * over all matched columns together. Short of that, the score is the share of gold columns matched
 * times the share of rows that agree over them: scrambled rows earn little however many columns match.
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
  const tolerance = policy.tolerance
  const column = (table: Table, index: number) => table.rows.map((row) => canonicalCell(row[index], policy))
  const goldColumns = checked.map((i) => column(gold, i))
  const answerColumns = answer.columns.map((_, i) => column(answer, i))
  const ignoreOrder = policy.row_order === "ignore"
  const sorted = (columns: ReadonlyArray<ReadonlyArray<Value>>) => (ignoreOrder ? columns.map((c) => [...c].sort(order)) : columns)
  const sortedAnswer = sorted(answerColumns)
  const candidates = sorted(goldColumns).map((g) => sortedAnswer.flatMap((a, i) => (sameList(g, a, tolerance) ? [i] : [])))
  const names = (indexes: ReadonlyArray<number>) => indexes.map((i) => gold.columns[checked[i]!]).join(", ")

  if (ignoreOrder && candidates.every((c) => c.length > 0)) {
    const found = consistentAssignment(candidates, goldColumns, answerColumns, tolerance)
    if (found !== null) return { score: 1, detail: `all ${checked.length} columns match, rows whole` }
  }
  const matched = maximumMatching(candidates)
  if (!ignoreOrder && matched.size === checked.length) return { score: 1, detail: `all ${checked.length} columns match in order` }
  const pairs = [...matched]
  const overlap = pairs.length === 0 ? 0 : rowOverlap(pairs.map(([g]) => goldColumns[g]!), pairs.map(([, a]) => answerColumns[a]!), tolerance, ignoreOrder)
  const rows = gold.rows.length === 0 ? 1 : overlap / gold.rows.length
  // Whole agreement was looked for and not found: whatever the shares, this is not a match.
  const score = Math.min((matched.size / checked.length) * rows, 1 - 1 / (checked.length * Math.max(1, gold.rows.length) + 1))
  const unmatched = candidates.flatMap((_, i) => (matched.has(i) ? [] : [i]))
  return {
    score,
    detail: unmatched.length > 0
      ? `no column of the answer matches ${names(unmatched)}; ${overlap} of ${gold.rows.length} rows agree over the others`
      : `each column matches on its own, but only ${overlap} of ${gold.rows.length} rows agree: values are paired differently`
  }
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

const rowsOf = (columns: ReadonlyArray<ReadonlyArray<Value>>) => (columns[0] ?? []).map((_, r) => columns.map((c) => c[r]!))

/** How many gold rows the answer holds too, over these paired columns (as multisets when order is ignored, position by position otherwise). */
const rowOverlap = (gold: ReadonlyArray<ReadonlyArray<Value>>, answer: ReadonlyArray<ReadonlyArray<Value>>, tolerance: Tolerance | undefined, ignoreOrder: boolean) => {
  const goldRows = rowsOf(gold)
  const answerRows = rowsOf(answer)
  if (!ignoreOrder) return goldRows.filter((row, r) => sameList(row, answerRows[r]!, tolerance)).length
  goldRows.sort(orderRows)
  answerRows.sort(orderRows)
  let count = 0
  for (let i = 0, j = 0; i < goldRows.length && j < answerRows.length; ) {
    if (sameList(goldRows[i]!, answerRows[j]!, tolerance)) {
      count++
      i++
      j++
    } else if (orderRows(goldRows[i]!, answerRows[j]!) < 0) i++
    else j++
  }
  return count
}

/**
 * A one-to-one pairing of the candidates under which the rows agree as a whole (as multisets of
 * rows), or null. Depth first, checking the rows over the columns paired so far at every step, and
 * trying only one of several identical answer columns.
 */
const consistentAssignment = (candidates: ReadonlyArray<ReadonlyArray<number>>, gold: ReadonlyArray<ReadonlyArray<Value>>, answer: ReadonlyArray<ReadonlyArray<Value>>, tolerance: Tolerance | undefined) => {
  const rowCount = gold[0]?.length ?? 0
  // Identical answer columns are interchangeable: one id per distinct column.
  const identity = new Map<string, number>()
  const columnId = answer.map((c) => {
    const key = JSON.stringify(c)
    if (!identity.has(key)) identity.set(key, identity.size)
    return identity.get(key)!
  })
  const byFewest = candidates.map((c, g) => ({ g, c })).sort((x, y) => x.c.length - y.c.length)
  const chosen: Array<number> = []
  const used = new Set<number>()
  let work = SEARCH_WORK
  const agrees = () => {
    const depth = chosen.length
    work -= rowCount * depth * Math.max(1, Math.log2(rowCount + 1))
    const goldRows = rowsOf(byFewest.slice(0, depth).map(({ g }) => gold[g]!)).sort(orderRows)
    const answerRows = rowsOf(chosen.map((a) => answer[a]!)).sort(orderRows)
    return goldRows.every((row, r) => sameList(row, answerRows[r]!, tolerance))
  }
  const search = (k: number): boolean => {
    if (k === byFewest.length) return true
    const tried = new Set<number>()
    for (const a of byFewest[k]!.c) {
      if (work < 0) return false
      if (used.has(a) || tried.has(columnId[a]!)) continue
      tried.add(columnId[a]!)
      used.add(a)
      chosen.push(a)
      if (agrees() && search(k + 1)) return true
      chosen.pop()
      used.delete(a)
    }
    return false
  }
  return search(0) ? chosen : null
}

/** Whether a line is a Markdown table's separator (|---|:--:|); read cell by cell, never by a backtracking pattern. */
const isSeparator = (line: string) => {
  const trimmed = line.trim()
  if (!trimmed.includes("-") || !trimmed.includes("|")) return false
  const cells = trimmed.replace(/^\|/, "").replace(/\|$/, "").split("|")
  return cells.length > 0 && cells.every((cell) => /^:?-+:?$/.test(cell.trim()))
}
const cellsOf = (line: string) =>
  line.trim().replace(/^\|/, "").replace(/(?<!\\)\|$/, "").split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"))

/** The first pipe table of a Markdown text (header, separator, rows; an empty cell or NULL is NULL), or null. */
export const markdownTable = (text: string): Table | null => {
  const lines = text.split(/\r?\n/)
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i]!.includes("|") || !isSeparator(lines[i + 1]!)) continue
    const columns = cellsOf(lines[i]!)
    const rows: Array<Array<Cell>> = []
    for (let j = i + 2; j < lines.length && lines[j]!.includes("|"); j++) {
      const cells = cellsOf(lines[j]!)
      rows.push(columns.map((_, k) => (cells[k] === undefined || cells[k] === "" || /^null$/i.test(cells[k]!) ? null : cells[k]!)))
    }
    return { columns, rows }
  }
  return null
}
