import { type Analysis, Findings, type NameSpan, type OuterLimit, type StatementKind, type TableReference } from "./Analysis"
import { type DialectProfile, type FunctionAllowance, functionRefusal } from "./Dialects"
import { systemRelationRefusal } from "./SystemRelations"
import { tokenize } from "./Lexer"
import { type Node, isNode, isQuery, list } from "./Tree"

/** Statement variants of sqlparser-rs that may appear nested (a CTE body, EXPLAIN's target): none is a read. */
/**
 * Statement variants of sqlparser-rs, as keys anywhere in the tree. Only names no expression or
 * argument node shares (a function's argument list is `List`, a CASE expression `Case`); nested
 * writes are caught structurally by READ_BODIES, and the root must be a read.
 */
const WRITE_NODES = new Set([
  "Insert", "Update", "Delete", "Merge", "Truncate", "Copy", "CopyIntoSnowflake", "LoadData", "Unload", "ExportData",
  "CreateTable", "CreateView", "AlterTable", "Drop", "Grant", "Revoke", "Kill", "Pragma", "AttachDatabase",
  "AttachDuckDBDatabase", "Install"
])

/** What a query's body may be: a SELECT, a nested query, a set operation, VALUES or TABLE t. */
const READ_BODIES = new Set(["Select", "Query", "SetOperation", "Values", "Table"])

// SHOW VARIABLES and SHOW STATUS read the server's configuration and statistics (datadir, secure_file_priv…): not metadata.
const SHOW_ROOTS = new Set([
  "ShowTables", "ShowColumns", "ShowDatabases", "ShowSchemas", "ShowViews", "ShowObjects", "ShowCreate", "ShowFunctions",
  "ShowCollation"
])

/** `@@` variables that describe the session's values; the rest (@@datadir, @@secure_file_priv, @@servername…) is configuration. */
const SERVER_VARIABLES = new Set(["@@version", "@@version_comment", "@@time_zone", "@@session.time_zone"])

// DuckDB reads a table name ending in a file type as that file (`select * from package.json`).
const FILE_TYPES = /^(csv|tsv|txt|json|jsonl|ndjson|parquet|arrow|avro|xlsx|gz|zst|db|duckdb|sqlite)$/i

const upperWords = (key: string) => key.replace(/([a-z])([A-Z])/g, "$1 $2").toUpperCase()

interface NamePart {
  readonly value: string
  readonly quote: string | undefined
  /** A part computed at run time, such as IDENTIFIER('…'). */
  readonly computed: boolean
}

const identPart = (ident: Node, computed: boolean): NamePart => ({
  value: String(ident.value ?? ""),
  quote: typeof ident.quote_style === "string" ? ident.quote_style : undefined,
  computed
})

/**
 * A name as the dialect certainly resolves it, for telling a CTE from a table: where an engine may
 * keep two spellings apart (case-sensitive names), they stay apart here, so a reference only
 * counts as a CTE's when the engine cannot read it as a table.
 */
const certainName = (dbType: DialectProfile["dbType"], value: string, quote: string | undefined) => {
  // Engines fold ASCII letters only: JavaScript's case mapping would make the Kelvin sign a k.
  switch (dbType) {
    case "snowflake":
      return quote === undefined ? value.replace(/[a-z]/g, (c) => c.toUpperCase()) : value
    case "mysql":
    case "mssql":
    case "clickhouse":
      return value
    default:
      return value.replace(/[A-Z]/g, (c) => c.toLowerCase())
  }
}

/** An ObjectName (a list of parts) or a bare Ident, as function names are written in name parts. */
const nameParts = (name: unknown): Array<NamePart> => {
  if (isNode(name)) return [identPart(name, false)]
  if (!Array.isArray(name)) return []
  return name.map((part) => {
    if (isNode(part) && isNode(part.Identifier)) return identPart(part.Identifier, false)
    const fn = isNode(part) && isNode(part.Function) && isNode(part.Function.name) ? part.Function.name : {}
    return identPart(fn, true)
  })
}

/** sqlparser-rs spans count lines and Unicode scalar values from 1; this maps them to string offsets. */
const locator = (sql: string) => {
  const lineStarts = [0]
  for (let i = 0; i < sql.length; i++) if (sql[i] === "\n") lineStarts.push(i + 1)
  return (line: number, column: number) => {
    let offset = lineStarts[line - 1] ?? sql.length
    for (let c = 1; c < column && offset < sql.length; c++) offset += (sql.codePointAt(offset) ?? 0) > 0xffff ? 2 : 1
    return offset
  }
}

/**
 * Walks sqlparser-rs's tree for one statement: the root must be a read; every query body anywhere
 * must be a read body (a data-modifying CTE has an Insert/Update/Delete/Merge body); no statement
 * node, SELECT … INTO, locking or SETTINGS/FORMAT clause, session-variable assignment, denied
 * function, file/URL/stage table or linked-server name; every table is collected.
 */
export const walkSqlparser = (
  statements: Array<unknown>,
  sql: string,
  profile: DialectProfile,
  findings: Findings,
  allowedFunctions: FunctionAllowance
): Analysis => {
  const tables: Array<TableReference> = []
  const databases: Array<string> = []
  let at: ReturnType<typeof locator> | undefined
  /** Where a relation's name is written, from its parts' spans (absent on some parts: then nowhere). */
  const spanOf = (table: Node): NameSpan | undefined => {
    const spans = list(table.name).map((p) => (isNode(p) && isNode(p.Identifier) && isNode(p.Identifier.span) ? p.Identifier.span : undefined))
    const first = spans[0]?.start as Node | undefined
    const lastStart = spans.at(-1)?.start as Node | undefined
    const last = spans.at(-1)?.end as Node | undefined
    if (spans.some((span) => span === undefined || Number((span.start as Node).line) < 1) || first === undefined || last === undefined || lastStart === undefined) return undefined
    at ??= locator(sql)
    const end = at(Number(last.line), Number(last.column))
    const alias = sql.slice(at(Number(lastStart.line), Number(lastStart.column)), end)
    return { start: at(Number(first.line), Number(first.column)), end, aliased: table.alias !== undefined && table.alias !== null, alias }
  }
  if (statements.length !== 1) findings.refuse(statements.length === 0 ? "the statement is empty" : "more than one statement")
  const root = isNode(statements[0]) ? statements[0] : {}
  const [rootKey] = Object.keys(root)
  const rootValue = root[rootKey ?? ""]

  const checkFunction = (parts: Array<NamePart>) => {
    const refusal = functionRefusal(profile, parts.map((p) => p.value), allowedFunctions)
    if (refusal !== undefined) findings.refuse(refusal)
  }

  const checkTable = (table: Node, scope: ReadonlySet<string>, span?: NameSpan) => {
    const parts = nameParts(table.name)
    if (table.args !== undefined && table.args !== null) return checkFunction(parts)
    if (parts.some((p) => p.computed)) findings.refuse("a table name computed at run time (IDENTIFIER) escapes the table policy")
    if (parts.length > profile.maxNameParts) findings.refuse(`a ${parts.length}-part table name reaches another server or catalog`)
    if (profile.pathTables && (parts.some((p) => p.quote === "'" || /[/\\:@~*?[]|^\.|\.[A-Za-z0-9]+$/.test(p.value)) || (parts.length > 1 && FILE_TYPES.test(parts.at(-1)!.value)))) {
      findings.refuse("a file, URL or stage cannot be read as a table")
    }
    const only = parts.length === 1 ? certainName(profile.dbType, parts[0]!.value, parts[0]!.quote) : undefined
    if (!(only !== undefined && scope.has(only))) {
      const system = systemRelationRefusal(profile.relations, parts.map((p) => p.value))
      if (system !== undefined) findings.refuse(system)
      tables.push(span === undefined ? { parts: parts.map((p) => p.value) } : { parts: parts.map((p) => p.value), at: span })
    }
  }

  const visitQuery = (query: Node, scope: ReadonlySet<string>) => {
    const [bodyKind] = Object.keys(query.body as Node)
    if (!READ_BODIES.has(bodyKind ?? "")) findings.refuse(`${upperWords(bodyKind ?? "an empty body")} is not a read`)
    if (Array.isArray(query.locks) && query.locks.length > 0) findings.refuse("a locking clause (FOR UPDATE / FOR SHARE)")
    if (query.settings !== undefined && query.settings !== null) findings.refuse("a SETTINGS clause changes the session")
    if (query.format_clause !== undefined && query.format_clause !== null) findings.refuse("a FORMAT clause is not allowed")
    let inner = scope
    const withClause = query.with
    if (isNode(withClause)) {
      const ctes = (Array.isArray(withClause.cte_tables) ? withClause.cte_tables : []).filter(isNode)
      const names = ctes.map((c) => {
        const name = isNode(c.alias) && isNode(c.alias.name) ? c.alias.name : {}
        return certainName(profile.dbType, String(name.value ?? ""), typeof name.quote_style === "string" ? name.quote_style : undefined)
      })
      const all = new Set([...scope, ...names])
      // A CTE sees itself (when recursive) and the ones before it; a later name may be a real table (DuckDB reads it so), so it is checked as one.
      ctes.forEach((cte, i) => visit(cte, new Set([...scope, ...names.slice(0, withClause.recursive ? i + 1 : i)])))
      inner = all
    }
    for (const [key, value] of Object.entries(query)) if (key !== "with") visit(value, inner)
  }

  const visit = (node: unknown, scope: ReadonlySet<string>): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item, scope)
      return
    }
    if (!isNode(node)) return
    if (isQuery(node)) return visitQuery(node, scope)
    for (const [key, value] of Object.entries(node)) {
      if (WRITE_NODES.has(key)) findings.refuse(`${upperWords(key)} is not a read`)
      if (key === "into" && value !== null && value !== undefined) findings.refuse("SELECT … INTO writes a table or variable")
      if (key === "op" && value === "Assignment") findings.refuse("assigning a session variable (:=) is not a read")
      if ((key === "Identifier" && isNode(value)) || (key === "CompoundIdentifier" && Array.isArray(value))) {
        const first = String((isNode(value) ? value : isNode(value[0]) ? value[0] : {}).value ?? "")
        const variable = (isNode(value) ? first : value.map((p) => (isNode(p) ? String(p.value) : "")).join(".")).toLowerCase()
        if (first.startsWith("@@") && !SERVER_VARIABLES.has(variable)) findings.refuse(`${variable} reads the server's configuration; only ${[...SERVER_VARIABLES].join(", ")} can be read`)
      }
      // Snowflake's time travel `AT (OFFSET => …)` is written as a call but is a clause of the table.
      if (key === "version" && isNode(value) && isNode(value.Function) && isNode(value.Function.Function)) {
        visit(value.Function.Function.args, scope)
        continue
      }
      if (key === "Function" && isNode(value)) checkFunction(nameParts(value.name))
      if (key === "Table" && isNode(value) && Array.isArray(value.name)) checkTable(value, scope, spanOf(value))
      // `TABLE t` as a query body (`select 1 union table t`) names its table apart.
      if (key === "Table" && isNode(value) && typeof value.table_name === "string") {
        const parts = [value.schema_name, value.table_name].filter((p): p is string => typeof p === "string")
        checkTable({ name: parts.map((p) => ({ Identifier: { value: p } })) }, scope)
      }
      visit(value, scope)
    }
  }

  /** What a SHOW statement names: the table of SHOW COLUMNS / SHOW CREATE TABLE, the database of SHOW TABLES FROM. */
  const showing = (rootKey: string, show: Node) => {
    const shown = isNode(show.show_options) && isNode(show.show_options.show_in) ? show.show_options.show_in.parent_name : undefined
    const name = rootKey === "ShowCreate" ? show.obj_name : shown
    if (!Array.isArray(name) || name.length === 0) return
    if (rootKey === "ShowColumns" || rootKey === "ShowCreate") checkTable({ name }, new Set())
    else databases.push(...nameParts(name).slice(-1).map((p) => p.value))
  }

  let kind: StatementKind = "query"
  let limit: OuterLimit = { kind: "fixed" }
  let topAt: number | undefined
  let ordered = false
  if (rootKey === "Query" && isQuery(rootValue)) {
    visitQuery(rootValue, new Set())
    limit = outerLimit(rootValue, sql, profile)
    if (profile.limitSyntax === "top" && isNode(rootValue.body) && isNode(rootValue.body.Select)) topAt = afterSelectKeyword(rootValue.body.Select, sql, profile)
    ordered = rootValue.order_by !== undefined && rootValue.order_by !== null
  } else if (rootKey === "Explain" && isNode(rootValue)) {
    kind = "explain"
    if (rootValue.analyze === true) findings.refuse("EXPLAIN ANALYZE runs the statement")
    const target = isNode(rootValue.statement) ? rootValue.statement : {}
    if (!isQuery(target.Query)) findings.refuse("EXPLAIN is allowed only for a query")
    visit(target, new Set())
  } else if (rootKey === "ExplainTable" && isNode(rootValue)) {
    kind = "describe"
    checkTable({ name: rootValue.table_name }, new Set())
  } else if (rootKey !== undefined && SHOW_ROOTS.has(rootKey)) {
    kind = "show"
    if (isNode(rootValue)) showing(rootKey, rootValue)
  } else if (rootKey !== undefined) {
    findings.refuse(`${upperWords(rootKey)} is not a read`)
  }
  return { kind, tables, databases, limit, topAt, ordered }
}

const literalAt = (expr: unknown, at: ReturnType<typeof locator>): OuterLimit => {
  const value = isNode(expr) && isNode(expr.Value) ? expr.Value : undefined
  const number = value && isNode(value.value) && Array.isArray(value.value.Number) ? String(value.value.Number[0]) : undefined
  const span = value && isNode(value.span) && isNode(value.span.start) && isNode(value.span.end) ? value.span : undefined
  if (number === undefined || !/^\d+$/.test(number) || span === undefined) return { kind: "fixed" }
  const start = at(Number((span.start as Node).line), Number((span.start as Node).column))
  const end = at(Number((span.end as Node).line), Number((span.end as Node).column))
  return { kind: "literal", value: Number(number), start, end }
}

/** The tokens from the outer SELECT keyword on; SQL Server's TOP carries no span of its own. */
const tokensFromSelect = (select: Node, sql: string, profile: DialectProfile) => {
  const token = isNode(select.select_token) && isNode(select.select_token.span) ? (select.select_token.span.start as Node) : undefined
  if (token === undefined) return []
  const from = locator(sql)(Number(token.line), Number(token.column))
  return tokenize(sql, profile.lexical).filter((t) => t.start >= from)
}

const afterSelectKeyword = (select: Node, sql: string, profile: DialectProfile) => {
  const [keyword, next] = tokensFromSelect(select, sql, profile)
  if (keyword?.text !== "SELECT") return undefined
  return next?.kind === "word" && (next.text === "DISTINCT" || next.text === "ALL") ? next.end : keyword.end
}

const topLiteral = (select: Node, sql: string, profile: DialectProfile): OuterLimit => {
  const top = isNode(select.top) ? select.top : undefined
  if (top === undefined) return { kind: "none" }
  if (top.with_ties || top.percent || !isNode(top.quantity) || typeof top.quantity.Constant !== "number") return { kind: "fixed" }
  const tokens = tokensFromSelect(select, sql, profile)
  const i = tokens.findIndex((t) => t.kind === "word" && t.text === "TOP")
  const number = tokens.slice(i + 1, i + 3).find((t) => t.kind === "number")
  if (i < 0 || number === undefined || Number(number.text) !== top.quantity.Constant) return { kind: "fixed" }
  return { kind: "literal", value: top.quantity.Constant, start: number.start, end: number.end }
}

const outerLimit = (query: Node, sql: string, profile: DialectProfile): OuterLimit => {
  const at = locator(sql)
  if (Array.isArray(query.pipe_operators) && query.pipe_operators.length > 0) return { kind: "fixed" }
  if (query.for_clause !== undefined && query.for_clause !== null) return { kind: "fixed" }
  // A bare VALUES list takes no LIMIT in every dialect (SQLite refuses one); the driver's cap holds.
  if (isNode(query.body) && "Values" in query.body) return { kind: "fixed" }
  const fetch = isNode(query.fetch) ? query.fetch : undefined
  const clause = isNode(query.limit_clause) ? query.limit_clause : undefined
  if (fetch !== undefined) return fetch.with_ties || fetch.percent ? { kind: "fixed" } : literalAt(fetch.quantity, at)
  if (clause !== undefined) {
    const form = (clause.LimitOffset ?? clause.OffsetCommaLimit) as Node | undefined
    if (!isNode(form) || (Array.isArray(form.limit_by) && form.limit_by.length > 0)) return { kind: "fixed" }
    return form.limit === null || form.limit === undefined ? { kind: "none" } : literalAt(form.limit, at)
  }
  if (profile.limitSyntax === "top" && isNode(query.body) && isNode(query.body.Select)) return topLiteral(query.body.Select, sql, profile)
  return { kind: "none" }
}
