import type { ColumnName, Cte, FromItem, QueryShape, SelectItem } from "./QueryShape"
import { isNode, list, mentions, type Node } from "../sqlguard/Tree"

const strings = (value: unknown) => list(value).map((p) => (isNode(p) && isNode(p.String) ? String(p.String.sval) : undefined))

/** A ColumnRef's parts; "*" for a star part. */
const refParts = (ref: Node) => list(ref.fields).map((f) => (isNode(f) && "A_Star" in f ? "*" : isNode(f) && isNode(f.String) ? String(f.String.sval) : "?"))

const unwrapCasts = (node: unknown): unknown => (isNode(node) && isNode(node.TypeCast) ? unwrapCasts(node.TypeCast.arg) : node)

/** Column references and nested queries of an expression; a subquery's own columns stay in it. */
const expressionInputs = (node: unknown, columns: Array<ColumnName>, subqueries: Array<QueryShape>) => {
  if (Array.isArray(node)) return node.forEach((n) => expressionInputs(n, columns, subqueries))
  if (!isNode(node)) return
  for (const [key, value] of Object.entries(node)) {
    if (key === "SubLink" && isNode(value)) {
      if (isNode(value.subselect) && isNode(value.subselect.SelectStmt)) subqueries.push(postgresShape(value.subselect.SelectStmt))
      expressionInputs(value.testexpr, columns, subqueries)
      continue
    }
    if (key === "ColumnRef" && isNode(value)) {
      const parts = refParts(value)
      columns.push({ qualifier: parts.slice(0, -1), name: parts.at(-1)! })
      continue
    }
    expressionInputs(value, columns, subqueries)
  }
}

const expressionItem = (expr: unknown, alias: string | undefined): SelectItem => {
  const value = unwrapCasts(expr)
  if (isNode(value) && isNode(value.ColumnRef)) {
    const parts = refParts(value.ColumnRef)
    if (parts.at(-1) === "*") return { kind: "star", qualifier: parts.at(-2) }
    return { kind: "column", column: { qualifier: parts.slice(0, -1), name: parts.at(-1)! }, alias }
  }
  const columns: Array<ColumnName> = []
  const subqueries: Array<QueryShape> = []
  expressionInputs(expr, columns, subqueries)
  const call = isNode(value) && isNode(value.FuncCall) ? value.FuncCall : undefined
  const countOnly = call !== undefined && strings(call.funcname).at(-1) === "count" && call.over === undefined
  return { kind: "expression", columns, subqueries, countOnly, alias }
}

const selectItem = (target: unknown): SelectItem => {
  const res = isNode(target) && isNode(target.ResTarget) ? target.ResTarget : {}
  return expressionItem(res.val, typeof res.name === "string" ? res.name : undefined)
}

const aliasColumnsOf = (alias: unknown) => (isNode(alias) ? strings(alias.colnames).filter((c): c is string => c !== undefined) : [])

const fromItems = (item: unknown): Array<FromItem> => {
  if (!isNode(item)) return []
  if (isNode(item.JoinExpr)) return [...fromItems(item.JoinExpr.larg), ...fromItems(item.JoinExpr.rarg)]
  if (isNode(item.RangeVar)) {
    const r = item.RangeVar
    const parts = [r.catalogname, r.schemaname, r.relname].filter((p): p is string => typeof p === "string")
    return [{ kind: "table", parts, alias: isNode(r.alias) ? String(r.alias.aliasname) : undefined, columns: aliasColumnsOf(r.alias) }]
  }
  if (isNode(item.RangeSubselect)) {
    const r = item.RangeSubselect
    const alias = isNode(r.alias) ? r.alias : {}
    const query = isNode(r.subquery) && isNode(r.subquery.SelectStmt) ? postgresShape(r.subquery.SelectStmt) : { kind: "opaque" as const, why: "a subquery" }
    return [{ kind: "query", query, alias: typeof alias.aliasname === "string" ? alias.aliasname : undefined, columns: strings(alias.colnames).filter((c): c is string => c !== undefined) }]
  }
  const aliased = Object.values(item).find((v) => isNode(v) && isNode(v.alias))
  const alias = isNode(aliased) && isNode(aliased.alias) ? String(aliased.alias.aliasname) : undefined
  // TABLESAMPLE, a function over a subquery (unnest(array(select …)))…: which output holds which column is not traced.
  if (mentions(item, "RangeVar")) return [{ kind: "query", query: { kind: "opaque", why: "a table expression over a table" }, alias, columns: [] }]
  const columns: Array<ColumnName> = []
  const reads: Array<QueryShape> = []
  expressionInputs(item, columns, reads)
  return [{ kind: "other", alias, columns, reads }]
}

const ctesOf = (select: Node): Array<Cte> => {
  const withClause = isNode(select.withClause) ? select.withClause : {}
  return list(withClause.ctes).map((c) => {
    const cte = isNode(c) && isNode(c.CommonTableExpr) ? c.CommonTableExpr : {}
    const query = isNode(cte.ctequery) && isNode(cte.ctequery.SelectStmt) ? postgresShape(cte.ctequery.SelectStmt) : { kind: "opaque" as const, why: "a CTE that is not a query" }
    return { name: String(cte.ctename), columns: strings(cte.aliascolnames).filter((n): n is string => n !== undefined), query }
  })
}

/** libpg_query's SelectStmt as a QueryShape (set operations' arms come without their wrapper). */
export const postgresShape = (select: Node): QueryShape => {
  const ctes = ctesOf(select)
  if (select.op !== undefined && select.op !== "SETOP_NONE") {
    return { kind: "set", ctes, arms: [select.larg, select.rarg].map((arm) => (isNode(arm) ? postgresShape(arm) : { kind: "opaque", why: "a set operation" })) }
  }
  if (select.valuesLists !== undefined) {
    return { kind: "values", rows: list(select.valuesLists).map((row) => list(isNode(row) && isNode(row.List) ? row.List.items : []).map((e) => expressionItem(e, undefined))) }
  }
  return { kind: "select", ctes, items: list(select.targetList).map(selectItem), from: list(select.fromClause).flatMap(fromItems) }
}
