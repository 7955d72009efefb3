import { createHmac } from "node:crypto"
import type { Column, QueryResult, Row } from "../../layers/connectors/Connector"
import type { ConnectionInput } from "../domain/Connection"
import type { PiiAction, PiiRule } from "../domain/Pii"
import type { TableInfo } from "../domain/SchemaSnapshot"
import { columnLineage, type OutputColumn } from "./lineage/ColumnLineage"
import { queryShapeOf } from "./lineage/QueryShapeOf"
import { maskText, REDACTED } from "./MaskExpressions"
import type { CheckedStatement } from "./sqlguard/SqlGuard"
import { type QualifiedName, qualify } from "./sqlguard/Names"
import { sameTable } from "./TablePolicy"

const STRENGTH: Record<PiiAction, number> = { mask: 1, hash: 2, redact: 3, drop: 4 }
export const strongest = (actions: ReadonlyArray<PiiAction>) =>
  actions.reduce<PiiAction | undefined>((a, b) => (a === undefined || STRENGTH[b] > STRENGTH[a] ? b : a), undefined)

export type MaskedColumns = ReadonlyArray<{ readonly column: string; readonly rule: PiiAction }>

export interface MaskedResult {
  readonly result: QueryResult
  readonly masked: MaskedColumns
}

/** How a result's rows are masked, decided once from its columns: applied row by row to a streamed result. */
export interface MaskPlan {
  readonly columns: ReadonlyArray<Column>
  readonly masked: MaskedColumns
  readonly maskRow: (row: Row) => Row
}

interface ResolvedRule {
  readonly table: QualifiedName
  readonly column: string
  readonly action: PiiAction
}

const maskValue = (action: PiiAction, value: unknown, hashKey: Buffer): unknown => {
  if (value === null || value === undefined) return value
  const text = typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value)
  switch (action) {
    case "mask":
      return maskText(text)
    case "hash":
      return createHmac("sha256", hashKey).update(text).digest("hex")
    default:
      return REDACTED
  }
}

const covers = (rule: { readonly column: string }, column: string) => rule.column === column

/** The rules of the tables a statement reads, resolved to qualified names. */
const piiRulesTouched = (checked: CheckedStatement, rules: ReadonlyArray<PiiRule>, connection: ConnectionInput): Array<ResolvedRule> => {
  if (rules.length === 0) return []
  const touched = checked.analysis.tables.map((t) => qualify(t.parts, connection))
  return rules
    .map((r) => ({ table: qualify(r.table.split("."), connection), column: r.column.toLowerCase(), action: r.action }))
    .filter((rule) => touched.some((t) => sameTable(rule.table, t)))
}

/**
 * PII masking by column lineage, the second line behind masking at the source: each output column
 * is traced to the base columns it comes from. A value that passes a PII column through unchanged
 * gets that column's rule (`atSource`: the database already applied it, so it is passed as it
 * is); a value computed from one is redacted (a count of it is not); where lineage cannot tell
 * which result column is which, every result column is redacted.
 */
export const maskPlan = (
  columns: ReadonlyArray<Column>,
  checked: CheckedStatement,
  rules: ReadonlyArray<PiiRule>,
  connection: ConnectionInput,
  hashKey: Buffer,
  atSource = false
): MaskPlan | undefined => {
  const relevant = piiRulesTouched(checked, rules, connection)
  if (relevant.length === 0) return undefined

  const rulesOfTable = (parts: ReadonlyArray<string>) => {
    const table = qualify(parts, connection)
    return relevant.filter((rule) => sameTable(rule.table, table))
  }
  const touchesPii = (output: OutputColumn) =>
    output.sources.some((s) => rulesOfTable(s.table).some((r) => covers(r, s.column) || s.column === "*")) ||
    output.anyColumnOf.some((t) => rulesOfTable(t).length > 0)

  /** The rule for an output that is not a star. */
  const decide = (output: OutputColumn): PiiAction | undefined => {
    if (output.countOnly || !touchesPii(output)) return undefined
    const direct = output.direct && output.anyColumnOf.length === 0
    if (!direct) return "redact"
    return strongest(output.sources.flatMap((s) => rulesOfTable(s.table).filter((r) => covers(r, s.column)).map((r) => r.action))) ?? "redact"
  }
  /** The rule for a result column a star yields, by its name. */
  const decideStar = (output: OutputColumn, name: string): PiiAction | undefined => {
    const byName = strongest((output.starOver ?? []).flatMap((t) => rulesOfTable(t).filter((r) => covers(r, name.toLowerCase())).map((r) => r.action)))
    return byName ?? (!output.direct && touchesPii(output) ? "redact" : undefined)
  }

  const lineage = columnLineage(queryShapeOf(checked))
  const everything = (): Array<PiiAction | undefined> => columns.map(() => "redact")
  let actions: Array<PiiAction | undefined>
  if ("unresolved" in lineage) actions = everything()
  else {
    const outputs = lineage.outputs
    const stars = outputs.filter((o) => o.starOver !== undefined)
    if (stars.length === 0) actions = outputs.length === columns.length ? outputs.map(decide) : everything()
    else if (stars.length === 1) {
      const at = outputs.findIndex((o) => o.starOver !== undefined)
      const after = outputs.length - at - 1
      const covered = columns.length - at - after
      actions =
        covered < 0
          ? everything()
          : columns.map((c, i) => (i < at ? decide(outputs[i]!) : i < at + covered ? decideStar(outputs[at]!, c.name) : decide(outputs[i - covered + 1]!)))
    } else {
      const computed = outputs.filter((o) => o.starOver === undefined)
      actions = computed.some(touchesPii) ? everything() : columns.map((c) => strongest(stars.flatMap((s) => decideStar(s, c.name) ?? [])))
    }
  }

  if (actions.every((a) => a === undefined)) return undefined
  const keep = columns.map((_, i) => actions[i] !== "drop")
  // Masked at the source, a mask or hash (given only to a column passed through) is there already; redacting is the same again.
  const applied = atSource ? actions.map((action) => (action === "redact" ? action : undefined)) : actions
  return {
    columns: columns.filter((_, i) => keep[i]),
    masked: columns.flatMap((c, i) => (actions[i] === undefined ? [] : [{ column: c.name, rule: actions[i]! }])),
    maskRow: (row) => row.flatMap((value, i) => (!keep[i] ? [] : [applied[i] === undefined ? value : maskValue(applied[i]!, value, hashKey)]))
  }
}

/** A whole result masked by `maskPlan`. */
export const maskResult = (
  result: QueryResult,
  checked: CheckedStatement,
  rules: ReadonlyArray<PiiRule>,
  connection: ConnectionInput,
  hashKey: Buffer,
  atSource = false
): MaskedResult => {
  const plan = maskPlan(result.columns, checked, rules, connection, hashKey, atSource)
  return plan === undefined
    ? { result, masked: [] }
    : { result: { ...result, columns: plan.columns, rows: result.rows.map(plan.maskRow) }, masked: plan.masked }
}

/**
 * Tables as a caller may see them: the planner's statistics of a column with a rule (its distinct
 * values, its share of nulls) describe its raw values, and are withheld like them.
 */
export const withoutPiiStatistics = (tables: ReadonlyArray<TableInfo>, rules: ReadonlyArray<PiiRule>, connection: ConnectionInput): ReadonlyArray<TableInfo> => {
  if (rules.length === 0) return tables
  const named = rules.map((rule) => ({ table: qualify(rule.table.split("."), connection), column: rule.column.toLowerCase() }))
  return tables.map((t) => {
    const own = named.filter((rule) => sameTable(rule.table, qualify([t.schema, t.name], connection)))
    if (own.length === 0) return t
    const hidden = (column: string) => own.some((rule) => covers(rule, column.toLowerCase()))
    return { ...t, columns: t.columns.map((c) => (hidden(c.name) ? { ...c, distinct_estimate: null, null_fraction: null } : c)) }
  })
}
