import { Either } from "effect"
import type { ConnectionInput } from "../domain/Connection"
import type { PiiRule } from "../domain/Pii"
import { maskPlan } from "./PiiMasking"
import type { CheckedStatement } from "./sqlguard/SqlGuard"
import type { Refusal } from "./sqlguard/Analysis"

export interface ViewDefinition {
  readonly schema: string
  readonly name: string
  /** The view's SELECT, or its whole CREATE VIEW statement (SQLite and DuckDB keep that). */
  readonly definition: string
  readonly columns: ReadonlyArray<string>
}

// Views over views: each round traces one more level.
const MAX_DEPTH = 8
const CREATE_VIEW = /^\s*create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?(?:materialized\s+)?view\s+(?:if\s+not\s+exists\s+)?.+?\s+as\s+/is

const selectOf = (definition: string) => definition.replace(CREATE_VIEW, "").replace(/;\s*$/, "")
const lastName = (table: string) => table.split(".").at(-1)!.toLowerCase()

/**
 * PII rules for views, derived by running column lineage over each view's definition: a view
 * column that passes a masked column through gets its rule; one computed from it is redacted.
 * A definition that does not parse, but names a PII table, redacts every column of the view.
 */
export const rulesThroughViews = (
  views: ReadonlyArray<ViewDefinition>,
  rules: ReadonlyArray<PiiRule>,
  connection: ConnectionInput,
  check: (sql: string) => Either.Either<CheckedStatement, Refusal>
): Array<PiiRule> => {
  const derived = new Map<string, PiiRule>()
  const key = (r: PiiRule) => `${r.table.toLowerCase()}\u0000${r.column.toLowerCase()}`
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const all = [...rules, ...derived.values()]
    const piiTables = new Set(all.map((r) => lastName(r.table)))
    let added = 0
    for (const view of views) {
      const sql = selectOf(view.definition)
      // Only a definition that names a PII table can carry one of its columns.
      if (![...piiTables].some((t) => sql.toLowerCase().includes(t))) continue
      const table = `${view.schema}.${view.name}`
      const checked = check(sql)
      const masked = Either.isLeft(checked)
        ? view.columns.map((column) => ({ column, rule: "redact" as const }))
        : (maskPlan(view.columns.map((name) => ({ name, type: "" })), checked.right, all, connection, Buffer.alloc(0))?.masked ?? [])
      for (const m of masked) {
        const rule = { table, column: m.column, action: m.rule }
        if (!derived.has(key(rule)) || derived.get(key(rule))!.action !== rule.action) {
          derived.set(key(rule), rule)
          added++
        }
      }
    }
    if (added === 0) break
  }
  return [...derived.values()]
}
