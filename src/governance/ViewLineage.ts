import { Either } from "effect"
import type { ConnectionInput } from "../domain/Connection"
import type { PiiRule } from "../domain/Pii"
import type { TableInfo } from "../domain/SchemaSnapshot"
import { quoteIdentifier } from "./Catalog"
import { maskPlan } from "./PiiMasking"
import type { CheckedStatement } from "./sqlguard/SqlGuard"
import type { Refusal } from "./sqlguard/Analysis"
import { qualify } from "./sqlguard/Names"
import { blockedBy, type ReachedBlocks, reachedBlock, sameTable } from "./TablePolicy"

export interface ViewDefinition {
  readonly schema: string
  readonly name: string
  /** The view's SELECT, or its whole CREATE VIEW statement (SQLite and DuckDB keep that). */
  readonly definition: string
  readonly columns: ReadonlyArray<string>
}

type Check = (sql: string) => Either.Either<CheckedStatement, Refusal>
interface Relation {
  readonly schema: string
  readonly name: string
}

// Views over views: each round traces one more level.
const MAX_DEPTH = 8
const CREATE_VIEW = /^\s*create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?(?:materialized\s+)?view\s+(?:if\s+not\s+exists\s+)?.+?\s+as\s+/is

const selectOf = (definition: string) => definition.replace(CREATE_VIEW, "").replace(/;\s*$/, "")

/** The relations a view's definition reads; undefined where it does not parse. */
export const viewReads = (definition: string, check: Check) => {
  const checked = check(selectOf(definition))
  return Either.isLeft(checked) ? undefined : checked.right.analysis.tables
}
const lastName = (table: string) => table.split(".").at(-1)!.toLowerCase()
const keyOf = (r: Relation) => `${r.schema}.${r.name}`.toLowerCase()
const nameOf = (r: Relation) => `${r.schema}.${r.name}`

/**
 * PII rules for views, derived by running column lineage over each view's definition: a view
 * column that passes a masked column through gets its rule; one computed from it is redacted.
 * A definition that does not parse, but names a PII table, redacts every column of the view.
 */
const rulesThroughViews = (
  views: ReadonlyArray<ViewDefinition>,
  rules: ReadonlyArray<PiiRule>,
  connection: ConnectionInput,
  check: Check
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

const viewsOf = (tables: ReadonlyArray<TableInfo>): Array<ViewDefinition> =>
  tables.flatMap((t) =>
    (t.kind === "view" || t.kind === "materialized_view") && t.definition !== null
      ? [{ schema: t.schema, name: t.name, definition: t.definition, columns: t.columns.map((c) => c.name) }]
      : []
  )

/**
 * The snapshot's partitions and inheritance children as a graph: every relation in it, with the
 * relations whose rows it reads (its descendants) and those that read its rows (its ancestors).
 */
const inheritanceOf = (tables: ReadonlyArray<TableInfo>) => {
  const nodes = new Map<string, Relation>()
  const children = new Map<string, Set<string>>()
  const parents = new Map<string, Set<string>>()
  const link = (from: Map<string, Set<string>>, a: string, b: string) => from.set(a, (from.get(a) ?? new Set()).add(b))
  for (const t of tables) {
    for (const d of t.descendants ?? []) {
      const child = { schema: d.schema, name: d.table }
      const parent = { schema: d.parent.schema, name: d.parent.table }
      nodes.set(keyOf(child), child)
      nodes.set(keyOf(parent), parent)
      link(children, keyOf(parent), keyOf(child))
      link(parents, keyOf(child), keyOf(parent))
    }
  }
  const walk = (start: string, edges: Map<string, Set<string>>) => {
    const seen = new Set<string>()
    const next = [start]
    while (next.length > 0) {
      for (const key of edges.get(next.pop()!) ?? []) {
        if (seen.has(key)) continue
        seen.add(key)
        next.push(key)
      }
    }
    return [...seen].map((key) => nodes.get(key)!)
  }
  /** Each relation with every relation on its line: its descendants and its ancestors (not its siblings). */
  return [...nodes].map(([key, node]) => ({ node, related: [...walk(key, children), ...walk(key, parents)] }))
}

/** The words of an expression that could name a column. */
const wordsOf = (text: string) => new Set(text.toLowerCase().split(/[^\p{L}\p{N}_$]+/u))

/**
 * PII rules for generated columns, which the catalog gives as their column's default: a column
 * whose expression passes a masked column of its table through gets its rule, one computed from it
 * is redacted, as a view's column is. An expression that names one but does not parse is redacted.
 */
const rulesThroughGeneratedColumns = (
  tables: ReadonlyArray<TableInfo>,
  rules: ReadonlyArray<PiiRule>,
  connection: ConnectionInput,
  check: Check
): Array<PiiRule> =>
  tables.flatMap((t) => {
    if (t.kind === "view" || t.kind === "materialized_view") return []
    const own = rules.filter((rule) => sameTable(qualify(rule.table.split("."), connection), qualify([t.schema, t.name], connection)))
    if (own.length === 0) return []
    const masked = new Set(own.map((rule) => rule.column.toLowerCase()))
    const table = `${t.schema}.${t.name}`
    const from = `${quoteIdentifier(connection.db_type, t.schema)}.${quoteIdentifier(connection.db_type, t.name)}`
    return t.columns.flatMap((column) => {
      if (column.default === null || masked.has(column.name.toLowerCase())) return []
      if (![...wordsOf(column.default)].some((word) => masked.has(word))) return []
      const checked = check(`select ${column.default} from ${from}`)
      const action = Either.isLeft(checked)
        ? "redact"
        : maskPlan([{ name: column.name, type: "" }], checked.right, rules, connection, Buffer.alloc(0))?.masked[0]?.rule
      return action === undefined ? [] : [{ table, column: column.name, action }]
    })
  })

/**
 * PII rules through relations: a partition or inheritance child gets the rules of the tables it
 * belongs to (every level), a table those of its partitions and children (it reads their rows), a
 * generated column those of the columns it is computed from, and a view the rules lineage traces
 * through its definition from any of these.
 */
export const rulesThroughRelations = (
  tables: ReadonlyArray<TableInfo>,
  rules: ReadonlyArray<PiiRule>,
  connection: ConnectionInput,
  check: Check
): Array<PiiRule> => {
  const named = rules.map((rule) => ({ rule, table: qualify(rule.table.split("."), connection) }))
  const inherited = inheritanceOf(tables).flatMap(({ node, related }) => {
    const own = named.filter((r) => sameTable(r.table, qualify([node.schema, node.name], connection)))
    return related.flatMap((other) => own.map(({ rule }) => ({ table: nameOf(other), column: rule.column, action: rule.action })))
  })
  const generated = rulesThroughGeneratedColumns(tables, [...rules, ...inherited], connection, check)
  return [...inherited, ...generated, ...rulesThroughViews(viewsOf(tables), [...rules, ...inherited, ...generated], connection, check)]
}

/**
 * The relations that read a blocked table: its partitions and inheritance children (every level),
 * the tables it is a partition or child of, and views whose definition reads any of these or
 * another such view. A definition that does not parse but names one of them is taken to read it.
 */
export const blocksThroughRelations = (tables: ReadonlyArray<TableInfo>, connection: ConnectionInput, check: Check): ReachedBlocks => {
  const reached = new Map<string, string>()
  if ((connection.blocked_tables ?? []).length === 0) return reached
  const blocked = (r: Relation) => blockedBy({ parts: [r.schema, r.name] }, connection) !== undefined
  for (const { node, related } of inheritanceOf(tables)) {
    if (!blocked(node)) continue
    for (const other of related) if (!blocked(other) && !reached.has(keyOf(other))) reached.set(keyOf(other), nameOf(node))
  }
  const named = tables.filter(blocked).map(nameOf)
  // A glob cannot be looked for in a definition's text: then every view is checked.
  const globbed = (connection.blocked_tables ?? []).some((entry) => /[*?[]/.test(entry))
  const views = viewsOf(tables).filter((v) => !blocked(v))
  const reaches = (ref: { readonly parts: ReadonlyArray<string> }) => {
    const name = qualify(ref.parts, connection)
    return blockedBy(ref, connection) !== undefined ? name.slice(1).filter((p) => p !== undefined).join(".") : reachedBlock(name, reached)
  }
  // No depth limit: each round reaches one more view or is the last.
  for (let added = 1; added > 0; ) {
    added = 0
    const candidates = [
      ...[...named, ...(connection.blocked_tables ?? [])].map((name) => ({ name: lastName(name), reaches: name })),
      ...[...reached].map(([key, reaches]) => ({ name: lastName(key), reaches }))
    ]
    for (const view of views) {
      if (reached.has(keyOf(view))) continue
      const sql = selectOf(view.definition)
      const lower = sql.toLowerCase()
      const mentioned = candidates.find((c) => lower.includes(c.name))
      if (mentioned === undefined && !globbed) continue
      const checked = check(sql)
      const through = Either.isLeft(checked) ? mentioned?.reaches : checked.right.analysis.tables.map(reaches).find((name) => name !== undefined)
      if (through !== undefined) {
        reached.set(keyOf(view), through)
        added++
      }
    }
  }
  return reached
}
