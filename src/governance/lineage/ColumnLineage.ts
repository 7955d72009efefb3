import type { ColumnName, FromItem, QueryShape, SelectItem } from "./QueryShape"

/** A base table's column an output can carry; `table` is the name parts as written, lower-cased. */
export interface SourceColumn {
  readonly table: ReadonlyArray<string>
  readonly column: string
}

export interface OutputColumn {
  /** The output's name where the query gives one (alias or column name). */
  readonly name: string | undefined
  readonly sources: ReadonlyArray<SourceColumn>
  /** Base tables any of whose columns may flow in (a subquery in an expression, a recursive CTE). */
  readonly anyColumnOf: ReadonlyArray<ReadonlyArray<string>>
  /** The value passes through unchanged (a column, through aliases, CTEs, subqueries and unions). */
  readonly direct: boolean
  /** `count(...)`: no value of its inputs is in the output. */
  readonly countOnly: boolean
  /** A `*` over these base tables: how many columns it yields is known only from the result. */
  readonly starOver: ReadonlyArray<ReadonlyArray<string>> | undefined
}

export type Lineage = { readonly outputs: ReadonlyArray<OutputColumn> } | { readonly unresolved: string }

class Unresolved {
  constructor(readonly why: string) {}
}

interface Relation {
  readonly alias: string | undefined
  readonly table: ReadonlyArray<string> | undefined
  /** Outputs of a derived table or CTE; undefined for a base table. */
  readonly outputs: ReadonlyArray<OutputColumn> | undefined
  /** A base table whose columns an alias list renamed: which name holds which column is unknown. */
  readonly renamed?: boolean
}

/** The relations a name can resolve against: this FROM's, then each enclosing query's (correlated and LATERAL references). */
type Scopes = ReadonlyArray<ReadonlyArray<Relation>>

const lower = (parts: ReadonlyArray<string>) => parts.map((p) => p.toLowerCase())
const uniqueTables = (tables: ReadonlyArray<ReadonlyArray<string>>) => [...new Map(tables.map((t) => [t.join("."), t])).values()]

const merge = (outputs: ReadonlyArray<OutputColumn>, name: string | undefined, direct: boolean, countOnly = false): OutputColumn => ({
  name,
  sources: outputs.flatMap((o) => o.sources),
  anyColumnOf: uniqueTables(outputs.flatMap((o) => [...o.anyColumnOf, ...(o.starOver ?? [])])),
  direct: direct && outputs.length > 0 && outputs.every((o) => o.direct && o.starOver === undefined),
  countOnly,
  starOver: undefined
})

const baseColumn = (table: ReadonlyArray<string>, column: string): OutputColumn => ({
  name: column,
  sources: [{ table, column }],
  anyColumnOf: [],
  direct: true,
  countOnly: false,
  starOver: undefined
})

/** Column aliases of a CTE or derived table, by position. */
const renamed = (outputs: ReadonlyArray<OutputColumn>, columns: ReadonlyArray<string>) =>
  columns.length === 0 ? outputs : outputs.map((o, i) => (i < columns.length ? { ...o, name: columns[i]!.toLowerCase() } : o))

/** Every base table a relation's columns can come from. */
const tablesOf = (relation: Relation): Array<ReadonlyArray<string>> =>
  relation.table !== undefined
    ? [relation.table]
    : (relation.outputs ?? []).flatMap((o) => [...o.sources.map((s) => s.table), ...o.anyColumnOf, ...(o.starOver ?? [])])

/** Whether a qualifier (`c`, `public.customers`) names this relation. */
const named = (relation: Relation, qualifier: ReadonlyArray<string>) =>
  relation.alias !== undefined
    ? relation.alias === qualifier.at(-1) && qualifier.length === 1
    : relation.table !== undefined && relation.table.join(".").endsWith(qualifier.join("."))

/**
 * What a column name can be: a qualified one, the relation of the nearest scope with that name;
 * an unqualified one, any relation of any scope (fail closed: a correlated reference may be meant).
 * A qualifier that names no relation in reach is not traced.
 */
const resolveColumn = (column: ColumnName, scopes: Scopes): OutputColumn => {
  const name = column.name.toLowerCase()
  const qualifier = lower(column.qualifier)
  const reachable = scopes.flat()
  const from = qualifier.length === 0 ? reachable : (scopes.find((relations) => relations.some((r) => named(r, qualifier))) ?? []).filter((r) => named(r, qualifier))
  if (from.length === 0) throw new Unresolved(qualifier.length === 0 ? `${name} names no relation` : `${qualifier.join(".")}.${name} names no relation in reach`)
  const outputs = from.flatMap((relation): Array<OutputColumn> => {
    if (relation.renamed) return [{ name, sources: [], anyColumnOf: [relation.table!], direct: false, countOnly: false, starOver: undefined }]
    if (relation.outputs === undefined) return [baseColumn(relation.table!, name)]
    const byName = relation.outputs.filter((o) => o.name === name)
    if (byName.length > 0) return byName
    const stars = relation.outputs.filter((o) => o.starOver !== undefined)
    if (stars.length > 0) return stars.flatMap((o) => o.starOver!.map((table) => baseColumn(table, name)))
    // A name the derived table does not show by name: it could be any of its columns.
    return [merge(relation.outputs, name, false)]
  })
  // A bare name that is also a relation's alias or name may be the whole row (`row_to_json(c)`, `select c from t c`).
  const wholeRows = qualifier.length === 0 ? reachable.filter((r) => (r.alias ?? r.table?.at(-1)) === name) : []
  if (wholeRows.length > 0) {
    outputs.push({ name, sources: [], anyColumnOf: uniqueTables(wholeRows.flatMap(tablesOf)), direct: false, countOnly: false, starOver: undefined })
  }
  return { ...merge(outputs, name, true), name }
}

/**
 * Traces every output column of a query back to base-table columns: through aliases, expressions,
 * CTEs (in scope order), subqueries and set operations. Unqualified names count for every
 * relation that could hold them, so an ambiguity only ever adds sources.
 */
export const columnLineage = (shape: QueryShape): Lineage => {
  const ctes = new Map<string, ReadonlyArray<OutputColumn>>()

  const outputsOf = (query: QueryShape, scope: ReadonlyMap<string, ReadonlyArray<OutputColumn>>, outer: Scopes): ReadonlyArray<OutputColumn> => {
    if (query.kind === "opaque") throw new Unresolved(query.why)
    if (query.kind === "values") {
      const width = Math.max(0, ...query.rows.map((row) => row.length))
      const cells = (i: number) => query.rows.flatMap((row) => (row[i] ? outputOf(row[i]!, outer, scope) : []))
      return Array.from({ length: width }, (_, i) => merge(cells(i), undefined, false))
    }
    const inner = new Map(scope)
    for (const cte of query.ctes) inner.set(cte.name.toLowerCase(), renamed(outputsOf(cte.query, inner, outer), cte.columns))
    if (query.kind === "set") {
      const arms = query.arms.map((arm) => outputsOf(arm, inner, outer))
      const width = Math.max(0, ...arms.map((a) => a.length))
      if (arms.some((a) => a.some((o) => o.starOver !== undefined))) {
        return [merge(arms.flat(), undefined, false)]
      }
      return Array.from({ length: width }, (_, i) => merge(arms.flatMap((a) => (a[i] ? [a[i]] : [])), arms[0]?.[i]?.name, true))
    }
    // Each FROM item may reach the ones before it (LATERAL) and the enclosing queries.
    const relations: Array<Relation> = []
    for (const item of query.from) relations.push(relationOf(item, inner, [relations, ...outer]))
    return query.items.flatMap((item) => outputOf(item, [relations, ...outer], inner))
  }

  const relationOf = (item: FromItem, scope: ReadonlyMap<string, ReadonlyArray<OutputColumn>>, reach: Scopes): Relation => {
    const alias = item.alias?.toLowerCase()
    if (item.kind === "query") return { alias, table: undefined, outputs: renamed(outputsOf(item.query, scope, reach), item.columns) }
    if (item.kind === "other") {
      const inputs = [...item.columns.map((c) => resolveColumn(c, reach)), ...item.reads.flatMap((q) => outputsOf(q, scope, reach))]
      return { alias, table: undefined, outputs: inputs.length === 0 ? [] : [{ ...merge(inputs, undefined, false), starOver: undefined }] }
    }
    const parts = lower(item.parts)
    const cte = parts.length === 1 ? scope.get(parts[0]!) : undefined
    if (cte !== undefined) return { alias: alias ?? parts[0], table: undefined, outputs: renamed(cte, item.columns) }
    return { alias, table: parts, outputs: undefined, renamed: item.columns.length > 0 }
  }

  const outputOf = (item: SelectItem, scopes: Scopes, scope: ReadonlyMap<string, ReadonlyArray<OutputColumn>>): ReadonlyArray<OutputColumn> => {
    const relations = scopes[0] ?? []
    if (item.kind === "column") {
      const resolved = resolveColumn(item.column, scopes)
      return [{ ...resolved, name: item.alias?.toLowerCase() ?? resolved.name }]
    }
    if (item.kind === "star") {
      const over = item.qualifier === undefined ? relations : relations.filter((r) => r.alias === item.qualifier!.toLowerCase() || r.table?.at(-1) === item.qualifier!.toLowerCase())
      // A star over CTEs and subqueries whose columns are all known is those columns, in order.
      if (over.length > 0 && over.every((r) => r.outputs !== undefined && r.outputs.length > 0 && r.outputs.every((o) => o.starOver === undefined))) {
        return over.flatMap((r) => r.outputs!)
      }
      const derived = over.filter((r) => r.outputs !== undefined)
      // A star over a table whose columns were renamed by an alias list: no name says which is which.
      if (over.some((r) => r.renamed)) return [{ name: undefined, sources: [], anyColumnOf: uniqueTables(over.flatMap(tablesOf)), direct: false, countOnly: false, starOver: uniqueTables(over.flatMap(tablesOf)) }]
      if (derived.some((r) => r.outputs!.some((o) => o.sources.length > 0 || o.anyColumnOf.length > 0))) {
        // A star over a derived table with computed columns: which result column is which is not knowable here.
        return [{ ...merge(derived.flatMap((r) => r.outputs!), undefined, false), starOver: uniqueTables(over.flatMap(tablesOf)) }]
      }
      return [{ name: undefined, sources: [], anyColumnOf: [], direct: true, countOnly: false, starOver: uniqueTables(over.flatMap(tablesOf)) }]
    }
    const inputs = item.columns.map((c) => resolveColumn(c, scopes))
    const nested = item.subqueries.flatMap((q) => outputsOf(q, scope, scopes))
    return [merge([...inputs, ...nested], item.alias?.toLowerCase(), false, item.countOnly)]
  }

  try {
    return { outputs: outputsOf(shape, ctes, []) }
  } catch (error) {
    if (error instanceof Unresolved) return { unresolved: error.why }
    throw error
  }
}
