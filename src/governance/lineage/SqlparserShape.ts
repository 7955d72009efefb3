import type { ColumnName, Cte, FromItem, QueryShape, SelectItem } from "./QueryShape"
import { isNode, isQuery, list, mentions, type Node } from "../sqlguard/Tree"

const identValue = (ident: unknown) => (isNode(ident) ? String(ident.value ?? "") : "")
const objectName = (name: unknown) => list(name).map((p) => (isNode(p) && isNode(p.Identifier) ? identValue(p.Identifier) : "?"))
const aliasOf = (alias: unknown) => (isNode(alias) && isNode(alias.name) ? identValue(alias.name) : undefined)
const aliasColumns = (alias: unknown) => (isNode(alias) ? list(alias.columns).map((c) => (isNode(c) ? identValue(c.name) : "")) : [])

const unwrap = (expr: unknown): unknown => {
  if (isNode(expr) && isNode(expr.Cast)) return unwrap(expr.Cast.expr)
  if (isNode(expr) && "Nested" in expr) return unwrap(expr.Nested)
  return expr
}

const columnOf = (expr: unknown): ColumnName | undefined => {
  if (isNode(expr) && isNode(expr.Identifier)) return { qualifier: [], name: identValue(expr.Identifier) }
  if (isNode(expr) && Array.isArray(expr.CompoundIdentifier)) {
    const parts = expr.CompoundIdentifier.map(identValue)
    return { qualifier: parts.slice(0, -1), name: parts.at(-1)! }
  }
  return undefined
}

/** Column references and nested queries of an expression; a function's name is not a column. */
const expressionInputs = (node: unknown, columns: Array<ColumnName>, subqueries: Array<QueryShape>): void => {
  if (Array.isArray(node)) return node.forEach((n) => expressionInputs(n, columns, subqueries))
  if (!isNode(node)) return
  if (isQuery(node)) {
    subqueries.push(sqlparserShape(node))
    return
  }
  const column = columnOf(node)
  if (column !== undefined) {
    columns.push(column)
    return
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === "Function" && isNode(value)) {
      // `email.upper()` (DuckDB) calls upper on the column: what qualifies a function's name may be a column.
      const name = objectName(value.name)
      if (name.length > 1) columns.push({ qualifier: name.slice(0, -2), name: name.at(-2)! })
      expressionInputs({ ...value, name: undefined }, columns, subqueries)
    } else expressionInputs(value, columns, subqueries)
  }
}

// Star options that change what a column holds or is called; EXCLUDE, EXCEPT and ILIKE only leave columns out.
const RESHAPING_STAR_OPTIONS = ["opt_replace", "opt_rename", "opt_apply"]
const reshapesColumns = (item: unknown) => {
  const options = !isNode(item) ? undefined : isNode(item.Wildcard) ? item.Wildcard : Array.isArray(item.QualifiedWildcard) ? item.QualifiedWildcard[1] : undefined
  return isNode(options) && RESHAPING_STAR_OPTIONS.some((key) => options[key] !== undefined && options[key] !== null)
}

/** DuckDB's and ClickHouse's COLUMNS(…) picks columns by pattern when the query runs: what it yields is not traced. */
const selectsColumnsByPattern = (node: unknown): boolean =>
  Array.isArray(node)
    ? node.some(selectsColumnsByPattern)
    : isNode(node) &&
      ((isNode(node.Function) && objectName(node.Function.name).at(-1)?.toLowerCase() === "columns") || Object.values(node).some(selectsColumnsByPattern))

const expressionItem = (expr: unknown, alias: string | undefined): SelectItem => {
  const column = columnOf(unwrap(expr))
  if (column !== undefined) return { kind: "column", column, alias }
  const columns: Array<ColumnName> = []
  const subqueries: Array<QueryShape> = []
  expressionInputs(expr, columns, subqueries)
  const fn = isNode(expr) && isNode(expr.Function) ? expr.Function : undefined
  const countOnly = fn !== undefined && objectName(fn.name).at(-1)?.toLowerCase() === "count" && fn.over === undefined
  return { kind: "expression", columns, subqueries, countOnly, alias }
}

const selectItem = (item: unknown): SelectItem => {
  if (isNode(item) && "Wildcard" in item) return { kind: "star", qualifier: undefined }
  if (isNode(item) && Array.isArray(item.QualifiedWildcard)) {
    const name = item.QualifiedWildcard[0]
    return { kind: "star", qualifier: objectName(isNode(name) ? name.ObjectName : undefined).at(-1) }
  }
  const withAlias = isNode(item) && isNode(item.ExprWithAlias) ? item.ExprWithAlias : undefined
  const expr = withAlias !== undefined ? withAlias.expr : isNode(item) ? item.UnnamedExpr : undefined
  return expressionItem(expr, withAlias !== undefined ? identValue(withAlias.alias) : undefined)
}

const relationItems = (relation: unknown): Array<FromItem> => {
  if (isNode(relation) && isNode(relation.Table) && (relation.Table.args === undefined || relation.Table.args === null)) {
    return [{ kind: "table", parts: objectName(relation.Table.name), alias: aliasOf(relation.Table.alias), columns: aliasColumns(relation.Table.alias) }]
  }
  if (isNode(relation) && isNode(relation.Derived) && isQuery(relation.Derived.subquery)) {
    const d = relation.Derived
    return [{ kind: "query", query: sqlparserShape(d.subquery as Node), alias: aliasOf(d.alias), columns: aliasColumns(d.alias) }]
  }
  // `FROM (a JOIN b ON …)`: the same relations as without the parentheses.
  if (isNode(relation) && isNode(relation.NestedJoin)) return tableWithJoins(relation.NestedJoin.table_with_joins)
  const inner = isNode(relation) ? Object.values(relation)[0] : undefined
  const alias = isNode(inner) ? aliasOf(inner.alias) : undefined
  // PIVOT, UNPIVOT, a table function over a table…: which output holds which column is not traced.
  if (mentions(inner, "Table")) return [{ kind: "query", query: { kind: "opaque", why: "a table expression over a table" }, alias, columns: [] }]
  const columns: Array<ColumnName> = []
  const reads: Array<QueryShape> = []
  expressionInputs(inner, columns, reads)
  return [{ kind: "other", alias, columns, reads }]
}

const tableWithJoins = (t: unknown): Array<FromItem> =>
  isNode(t) ? [...relationItems(t.relation), ...list(t.joins).flatMap((j) => relationItems(isNode(j) ? j.relation : undefined))] : []

const fromItems = (from: unknown): Array<FromItem> => list(from).flatMap(tableWithJoins)

const bodyShape = (body: unknown, ctes: Array<Cte>): QueryShape => {
  if (!isNode(body)) return { kind: "opaque", why: "an empty query" }
  if (isNode(body.Select)) {
    const select = body.Select
    if (list(select.lateral_views).length > 0) return { kind: "opaque", why: "a LATERAL VIEW" }
    // `* REPLACE (ssn AS id)` puts one column's values under another's name: which is which is not traced.
    if (list(select.projection).some(reshapesColumns)) return { kind: "opaque", why: "a star that replaces or renames columns" }
    if (selectsColumnsByPattern(select.projection)) return { kind: "opaque", why: "COLUMNS(…)" }
    return { kind: "select", ctes, items: list(select.projection).map(selectItem), from: fromItems(select.from) }
  }
  if (isNode(body.SetOperation)) {
    return { kind: "set", ctes, arms: [bodyShape(body.SetOperation.left, []), bodyShape(body.SetOperation.right, [])] }
  }
  if (isQuery(body.Query)) return ctes.length === 0 ? sqlparserShape(body.Query) : { kind: "set", ctes, arms: [sqlparserShape(body.Query)] }
  if (isNode(body.Values)) {
    // A row is its expressions, or (newer sqlparser-rs) an object holding them under `content`; any other shape is not traced.
    const rows = list(body.Values.rows).map((row) => (Array.isArray(row) ? row : isNode(row) && Array.isArray(row.content) ? row.content : undefined))
    if (rows.some((row) => row === undefined)) return { kind: "opaque", why: "a VALUES row of an unknown shape" }
    return { kind: "values", rows: rows.map((row) => row!.map((e) => expressionItem(e, undefined))) }
  }
  return { kind: "opaque", why: `a ${Object.keys(body)[0]} body` }
}

/** sqlparser-rs's Query as a QueryShape. */
export const sqlparserShape = (query: Node): QueryShape => {
  const withClause = isNode(query.with) ? query.with : {}
  const ctes = list(withClause.cte_tables).map((c): Cte => {
    const cte = isNode(c) ? c : {}
    return { name: aliasOf(cte.alias) ?? "", columns: aliasColumns(cte.alias), query: isQuery(cte.query) ? sqlparserShape(cte.query) : { kind: "opaque", why: "a CTE" } }
  })
  if (list(query.pipe_operators).length > 0) return { kind: "opaque", why: "pipe syntax" }
  return bodyShape(query.body, ctes)
}
