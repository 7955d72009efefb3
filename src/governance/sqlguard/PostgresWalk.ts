import { type Analysis, Findings, type OuterLimit, type StatementKind, type TableReference } from "./Analysis"
import { type DialectProfile, type FunctionAllowance, functionRefusal } from "./Dialects"
import { nameEndAt, tokenize } from "./Lexer"
import { systemRelationRefusal } from "./SystemRelations"
import { type Node, isNode } from "./Tree"

/** Settings that describe how the session reads and writes values; the rest (file paths, ssl_*, hba_file, SHOW ALL) is configuration. */
const SHOWN_SETTINGS = new Set([
  "search_path", "timezone", "datestyle", "intervalstyle", "server_version", "server_version_num", "server_encoding",
  "client_encoding", "standard_conforming_strings", "transaction_isolation", "transaction_read_only", "statement_timeout",
  "lc_collate", "lc_ctype", "lc_monetary", "lc_numeric", "lc_time", "max_identifier_length", "extra_float_digits", "bytea_output"
])

/**
 * `current_setting('…')` of a setting SHOW may show: the same reviewed list, named by a literal
 * (a name computed at run time could be any setting), with or without missing_ok.
 */
const showsSetting = (call: Node) => {
  const [name, missingOk, ...rest] = Array.isArray(call.args) ? call.args : []
  const literal = isNode(name) && isNode(name.A_Const) && isNode(name.A_Const.sval) ? String(name.A_Const.sval.sval ?? "") : undefined
  const flag = missingOk === undefined || (isNode(missingOk) && isNode(missingOk.A_Const) && isNode(missingOk.A_Const.boolval))
  return literal !== undefined && SHOWN_SETTINGS.has(literal.toLowerCase()) && flag && rest.length === 0
}

/** "CreateTableAsStmt" → "CREATE TABLE AS". */
const statementName = (key: string) => key.replace(/Stmt$/, "").replace(/([a-z])([A-Z])/g, "$1 $2").toUpperCase()

const nameParts = (list: unknown): Array<string> =>
  Array.isArray(list) ? list.map((part) => (isNode(part) && isNode(part.String) ? String(part.String.sval ?? "") : "")) : []

/** libpg_query reports byte offsets into the UTF-8 text; JavaScript strings index UTF-16 units. */
const charOffset = (sql: string) => {
  if (/^[\x00-\x7f]*$/.test(sql)) return (byte: number) => byte
  const bytes = Buffer.from(sql, "utf8")
  return (byte: number) => bytes.subarray(0, byte).toString("utf8").length
}

/**
 * Walks libpg_query's tree for one statement: the root must be a read, no other statement may
 * appear anywhere (a data-modifying CTE is an InsertStmt/UpdateStmt/DeleteStmt/MergeStmt inside a
 * SelectStmt), no SELECT … INTO or locking clause, no denied function; every table is collected.
 */
export const walkPostgres = (
  parsed: { stmts?: Array<{ stmt?: Node }> },
  sql: string,
  profile: DialectProfile,
  findings: Findings,
  allowedFunctions: FunctionAllowance
): Analysis => {
  const tables: Array<TableReference> = []
  const toChar = charOffset(sql)
  let tokens: ReturnType<typeof tokenize> | undefined
  /** Where a relation of a FROM clause is written; ONLY t is not a place a derived table can stand. */
  const spanOf = (range: Node) => {
    if (typeof range.location !== "number" || range.inh === false) return undefined
    const start = toChar(range.location)
    const name = nameEndAt((tokens ??= tokenize(sql, profile.lexical)), start)
    return name === undefined ? undefined : { start, end: name.end, aliased: isNode(range.alias), alias: sql.slice(name.last, name.end) }
  }
  const statements = parsed.stmts ?? []
  if (statements.length !== 1) findings.refuse(statements.length === 0 ? "the statement is empty" : "more than one statement")
  const root = statements[0]?.stmt ?? {}
  const [rootKey] = Object.keys(root)
  const rootValue = root[rootKey ?? ""]

  const checkFunction = (parts: Array<string>) => {
    const refusal = functionRefusal(profile, parts, allowedFunctions)
    if (refusal !== undefined) findings.refuse(refusal)
  }

  const visitSelect = (select: Node, scope: ReadonlySet<string>) => {
    let inner = scope
    const withClause = select.withClause
    if (isNode(withClause)) {
      const ctes = (Array.isArray(withClause.ctes) ? withClause.ctes : []).map((c) => (isNode(c) && isNode(c.CommonTableExpr) ? c.CommonTableExpr : {}))
      const names = ctes.map((c) => String(c.ctename ?? ""))
      const all = new Set([...scope, ...names])
      // A CTE sees itself (when recursive) and the ones before it; a later name may be a real table (DuckDB reads it so), so it is checked as one.
      ctes.forEach((cte, i) => visit(cte.ctequery, new Set([...scope, ...names.slice(0, withClause.recursive ? i + 1 : i)])))
      inner = all
    }
    for (const [key, value] of Object.entries(select)) {
      // A set operation's arms are SelectStmts written without their wrapper.
      if ((key === "larg" || key === "rarg") && isNode(value)) visitSelect(value, inner)
      else if (key !== "withClause") visit({ [key]: value }, inner)
    }
  }

  const visit = (node: unknown, scope: ReadonlySet<string>): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item, scope)
      return
    }
    if (!isNode(node)) return
    for (const [key, value] of Object.entries(node)) {
      if (key === "SelectStmt" && isNode(value)) {
        visitSelect(value, scope)
        continue
      }
      if (key.endsWith("Stmt")) findings.refuse(`${statementName(key)} is not a read`)
      if (key === "intoClause") findings.refuse("SELECT … INTO writes a table")
      if (key === "LockingClause") findings.refuse("a locking clause (FOR UPDATE / FOR SHARE)")
      // SQL-standard syntax (TRIM, SUBSTRING … FROM, COLLATION FOR, AT TIME ZONE, SIMILAR TO, SYSTEM_USER) becomes a call of a built-in the grammar chose.
      if (key === "FuncCall" && isNode(value) && value.funcformat !== "COERCE_SQL_SYNTAX") {
        const parts = nameParts(value.funcname)
        const setting = profile.grammar === "postgres" && parts.at(-1) === "current_setting" && (parts.length === 1 || (parts.length === 2 && parts[0] === "pg_catalog")) && showsSetting(value)
        if (!setting) checkFunction(parts)
      }
      // OPERATOR(schema.op) calls whatever function that schema's operator names.
      if (key === "A_Expr" && isNode(value)) {
        const qualifier = nameParts(value.name).slice(0, -1)
        if (qualifier.length > 0 && !(qualifier.length === 1 && qualifier[0] === "pg_catalog")) findings.refuse(`the operator ${nameParts(value.name).join(".")} is not a built-in operator`)
      }
      if (key === "RangeVar" && isNode(value)) {
        const parts = [value.catalogname, value.schemaname, value.relname].filter((p): p is string => typeof p === "string")
        if (!(parts.length === 1 && scope.has(parts[0]!))) {
          const system = systemRelationRefusal(profile.relations, parts)
          if (system !== undefined) findings.refuse(system)
          const at = spanOf(value)
          tables.push(at === undefined ? { parts } : { parts, at })
        }
      }
      visit(value, scope)
    }
  }

  let kind: StatementKind = "query"
  let limit: OuterLimit = { kind: "fixed" }
  if (rootKey === "SelectStmt" && isNode(rootValue)) {
    visitSelect(rootValue, new Set())
    limit = outerLimit(rootValue, sql)
  } else if (rootKey === "ExplainStmt" && isNode(rootValue)) {
    kind = "explain"
    const options = Array.isArray(rootValue.options) ? rootValue.options : []
    if (options.some((o) => isNode(o) && isNode(o.DefElem) && String(o.DefElem.defname).toLowerCase() === "analyze")) {
      findings.refuse("EXPLAIN ANALYZE runs the statement")
    }
    if (!(isNode(rootValue.query) && "SelectStmt" in rootValue.query)) findings.refuse("EXPLAIN is allowed only for a query")
    visit(rootValue.query, new Set())
  } else if (rootKey === "VariableShowStmt" && isNode(rootValue)) {
    kind = "show"
    const setting = String(rootValue.name ?? "").toLowerCase()
    // DuckDB's SHOW TABLES reaches here through the cross-check; its own walk decides.
    if (profile.grammar === "postgres" && !SHOWN_SETTINGS.has(setting)) findings.refuse(`SHOW ${setting} reads the server's configuration; only ${[...SHOWN_SETTINGS].join(", ")} can be shown`)
  } else if (rootKey !== undefined) {
    findings.refuse(`${statementName(rootKey)} is not a read`)
  }
  return { kind, tables, databases: [], limit, topAt: undefined, ordered: false }
}

const outerLimit = (select: Node, sql: string): OuterLimit => {
  if (select.limitOption === "LIMIT_OPTION_WITH_TIES") return { kind: "fixed" }
  const count = select.limitCount
  if (count === undefined) return { kind: "none" }
  const constant = isNode(count) && isNode(count.A_Const) ? count.A_Const : undefined
  if (constant === undefined || !isNode(constant.ival) || typeof constant.location !== "number") return { kind: "fixed" }
  const start = charOffset(sql)(constant.location)
  const digits = /^\d+/.exec(sql.slice(start))
  if (!digits) return { kind: "fixed" }
  return { kind: "literal", value: Number(digits[0]), start, end: start + digits[0].length }
}
