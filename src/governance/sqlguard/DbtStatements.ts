import { parseSync as parsePostgres } from "libpg-query"
import { matchesFunction } from "./Dialects"
import { literalShape } from "./LiteralShape"
import { isNode, type Node } from "./Tree"

/** The most one statement (a simple query's text, or a Parse's) may hold. */
export const DBT_STATEMENT_MAX_BYTES = 1024 * 1024
/** How a branch session reads statement text must be how the classifier reads it; the session cannot change these (it refuses SET of them). */
export const READS_AS_CLASSIFIED = { client_encoding: "UTF8", standard_conforming_strings: "on", backslash_quote: "safe_encoding" } as const

/**
 * What dbt may run in a branch: reads, its DDL and DML, transactions, session settings that only
 * shape its own session, cursors and prepared statements. Everything else (GRANT/REVOKE, roles,
 * functions, DO blocks, extensions, other databases, server settings) is refused.
 */
const ALLOWED = new Set([
  "SelectStmt",
  "InsertStmt",
  "UpdateStmt",
  "DeleteStmt",
  "MergeStmt",
  "CreateSchemaStmt",
  "CreateStmt",
  "CreateTableAsStmt",
  "ViewStmt",
  "IndexStmt",
  "AlterTableStmt",
  "RenameStmt",
  "AlterObjectSchemaStmt",
  "DropStmt",
  "TruncateStmt",
  "CommentStmt",
  "CreateSeqStmt",
  "AlterSeqStmt",
  "TransactionStmt",
  "VariableSetStmt",
  "VariableShowStmt",
  "ExplainStmt",
  "CopyStmt",
  "VacuumStmt",
  "LockStmt",
  "DeclareCursorStmt",
  "FetchStmt",
  "ClosePortalStmt",
  "PrepareStmt",
  "ExecuteStmt",
  "DeallocateStmt",
  "DiscardStmt",
  "RefreshMatViewStmt"
])

// Settings a session of dbt's may change: how it writes values, its lock waits, its search path, the planner's choices.
// Never its role; nothing that changes how the server reads statement text (standard_conforming_strings, client_encoding,
// backslash_quote: the proxy reads it as UTF-8 with standard strings, as the upstream session is pinned to); and nothing
// that lifts what the session may use of the warehouse's server (statement_timeout, work_mem, maintenance_work_mem,
// temp_buffers: a branch shares that server, and one statement with work_mem of a terabyte took 5 GB of it, attack 38 F3).
const SETTINGS = new Set([
  "search_path", "timezone", "datestyle", "intervalstyle", "application_name", "extra_float_digits",
  "lock_timeout", "idle_in_transaction_session_timeout", "client_min_messages", "bytea_output", "default_transaction_isolation",
  "default_transaction_read_only", "transaction", "session characteristics", "jit", "enable_nestloop", "enable_hashjoin",
  "enable_mergejoin", "enable_seqscan", "random_page_cost", "constraint_exclusion"
])

// Functions that reach files, programs, other servers or sessions, the server's own state, or run SQL held in a string.
const NEVER = [
  "pg_read_*", "pg_ls_*", "pg_stat_file", "pg_file_*", "pg_logdir_ls", "lo_*", "dblink*", "set_config", "pg_terminate_backend",
  "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_switch_wal", "pg_create_*", "pg_drop_*", "pg_replication_*",
  "pg_logical_*", "pg_promote", "pg_wal_replay_*", "pg_backup_*", "pg_start_backup", "pg_stop_backup", "pg_export_snapshot",
  "pg_log_backend_memory_contexts", "pg_import_system_collations", "pg_notify", "query_to_xml*", "cursor_to_xml*", "table_to_xml*",
  "schema_to_xml*", "database_to_xml*", "ts_stat", "ts_rewrite", "crosstab*", "connectby"
]

// Roles a statement may name: the session's own.
const OWN_ROLES = new Set(["ROLESPEC_CURRENT_USER", "ROLESPEC_CURRENT_ROLE", "ROLESPEC_SESSION_USER"])

/** One statement of a query's text: its kind (CREATE TABLE AS, …) and its own text. */
export interface DbtStatement {
  readonly kind: string
  readonly sql: string
}

export type DbtVerdict = { readonly allowed: true; readonly statements: ReadonlyArray<DbtStatement> } | { readonly allowed: false; readonly reason: string }

const statementNames = new Map<string, string>()
const statementName = (key: string) => {
  let name = statementNames.get(key)
  if (name === undefined) {
    name = key.replace(/Stmt$/, "").replace(/([a-z])([A-Z])/g, "$1 $2").toUpperCase()
    if (statementNames.size < 1_000) statementNames.set(key, name)
  }
  return name
}
/** A statement node's key: CreateStmt, SelectStmt… (a plain test: this runs for every key of every node). */
const isStatementKey = (key: string) => key.length > 4 && key.charCodeAt(0) >= 65 && key.charCodeAt(0) <= 90 && key.endsWith("Stmt")

// Statements that write rows, and where their target is.
const WRITES = new Set(["InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt", "CopyStmt", "TruncateStmt"])
// Two-phase commit would leave a prepared transaction holding the branch's locks (and the branch undroppable) past its session.
const TWO_PHASE = new Set(["TRANS_STMT_PREPARE", "TRANS_STMT_COMMIT_PREPARED", "TRANS_STMT_ROLLBACK_PREPARED"])

/**
 * Whether a write lands in the system catalogs: a relation of pg_catalog or information_schema, or
 * an unqualified pg_ name, which resolves to pg_catalog first (UPDATE pg_settings sets settings).
 */
const systemTarget = (key: string, statement: Node) => {
  if (!WRITES.has(key)) return false
  const relations = [statement.relation, ...(Array.isArray(statement.relations) ? statement.relations : [])].map((r) => (isNode(r) && isNode(r.RangeVar) ? r.RangeVar : r))
  return relations.some((relation) => {
    if (!isNode(relation) || typeof relation.relname !== "string") return false
    const schema = typeof relation.schemaname === "string" ? relation.schemaname.toLowerCase() : null
    return schema === "pg_catalog" || schema === "information_schema" || (schema === null && relation.relname.toLowerCase().startsWith("pg_"))
  })
}

/** Why one statement's tree is refused, or undefined. */
const refusalIn = (key: string, statement: Node, database: string): string | undefined => {
  if (!ALLOWED.has(key)) return `${statementName(key)} is not allowed through the dbt proxy`
  if (key === "TransactionStmt" && TWO_PHASE.has(String(statement.kind))) return "two-phase commit (PREPARE TRANSACTION) is not allowed through the dbt proxy"
  if (key === "CopyStmt" && (statement.is_program === true || typeof statement.filename === "string")) {
    return "COPY to or from a file or program is not allowed through the dbt proxy (COPY … FROM STDIN and TO STDOUT are)"
  }
  if (key === "VariableSetStmt" && statement.kind !== "VAR_RESET_ALL" && !SETTINGS.has(String(statement.name ?? "").toLowerCase())) {
    return `SET ${String(statement.name ?? "")} is not allowed through the dbt proxy`
  }
  if (systemTarget(key, statement)) return "writes to the system catalogs (pg_settings among them) are not allowed through the dbt proxy"
  let reason: string | undefined
  // A view over pg_settings is updatable, and its rule makes an UPDATE through it set_config (any setting, those the proxy pins among them);
  // a view may stand alone or inside CREATE SCHEMA.
  const view = key === "ViewStmt"
  // Checked by shape, wherever the node stands: a relation is a RangeVar whether wrapped (FROM) or bare (INSERT INTO, CREATE … AS's target).
  // Plain loops: this runs for every node of every statement not seen before (Object.entries cost four times as much).
  const visit = (value: unknown, inOption = false, inView = view): void => {
    if (reason !== undefined || typeof value !== "object" || value === null) return
    if (Array.isArray(value)) {
      for (const item of value) visit(item, inOption, inView)
      return
    }
    if (!isNode(value)) return
    if (typeof value.relname === "string" && typeof value.catalogname === "string" && value.catalogname !== database) {
      reason = `${value.catalogname} is another database: statements through the dbt proxy stay in their branch`
      return
    }
    if (inView && typeof value.relname === "string" && value.relname.toLowerCase() === "pg_settings") {
      reason = "a view over pg_settings is not allowed through the dbt proxy (an UPDATE through it changes settings)"
      return
    }
    // A name list of three parts (DROP, COMMENT ON) is database.schema.object; an option's list of strings (COPY's force_null) is none.
    const names = !inOption && isNode(value.List) && Array.isArray(value.List.items) ? value.List.items : undefined
    if (names !== undefined && names.length >= 3 && names.every((item) => isNode(item) && isNode(item.String))) {
      const first = String(((names[0] as Node).String as Node).sval ?? "")
      if (first !== database) {
        reason = `${first} is another database: statements through the dbt proxy stay in their branch`
        return
      }
    }
    if (typeof value.roletype === "string" && !OWN_ROLES.has(value.roletype)) {
      reason = "statements through the dbt proxy name no role but their own (no GRANT, owner or AUTHORIZATION changes)"
      return
    }
    if (value.subtype === "AT_ChangeOwner") {
      reason = "ALTER … OWNER TO is not allowed through the dbt proxy"
      return
    }
    const call = value.FuncCall
    if (isNode(call)) {
      const parts = (Array.isArray(call.funcname) ? call.funcname : []).map((part) => (isNode(part) && isNode(part.String) ? String(part.String.sval ?? "") : ""))
      if (matchesFunction(NEVER, parts.map((p) => p.toLowerCase())) !== undefined) {
        reason = `the function ${parts.join(".")} is not allowed through the dbt proxy (it reaches files, programs, other servers or sessions, or runs SQL held in a string)`
        return
      }
    }
    for (const key in value) {
      const child = value[key]
      // A statement inside another (CREATE SCHEMA's elements, a data-modifying CTE) is held to the same list.
      if (isStatementKey(key) && !ALLOWED.has(key)) {
        reason = `${statementName(key)} is not allowed through the dbt proxy`
        return
      }
      if (typeof child !== "object" || child === null) continue
      if (WRITES.has(key) && isNode(child) && systemTarget(key, child)) {
        reason = "writes to the system catalogs (pg_settings among them) are not allowed through the dbt proxy"
        return
      }
      visit(child, inOption || key === "DefElem", inView || key === "ViewStmt")
    }
  }
  visit(statement)
  return reason
}

// Verdicts are a pure function of (database, text), and dbt sends the same introspection statements again and again.
const MEMO_ENTRIES = 500
const MEMO_MAX_SQL = 4_096
const memo = new Map<string, DbtVerdict>()
// A single allowed statement's kind by its literal shape: nothing a verdict reads is a constant's value (the walk reads names,
// kinds and the presence of a file name, never a constant), so statements that differ only in constants share it.
const shapes = new Map<string, string>()

const remember = <V>(map: Map<string, V>, key: string, value: V) => {
  map.set(key, value)
  if (map.size > MEMO_ENTRIES) map.delete(map.keys().next().value!)
}
const recall = <V>(map: Map<string, V>, key: string) => {
  const known = map.get(key)
  if (known !== undefined) {
    map.delete(key)
    map.set(key, known)
  }
  return known
}

/**
 * A dbt proxy's verdict on the text of a simple query or a Parse, for a session in `database`:
 * every statement parsed with PostgreSQL's own parser and allowed, or the first reason to refuse.
 */
export const classifyDbtSql = (sql: string, database: string): DbtVerdict => {
  if (sql.length > MEMO_MAX_SQL) return classify(sql, database)
  const key = `${database}\u0000${sql}`
  const known = recall(memo, key)
  if (known !== undefined) return known
  const shape = literalShape(sql)
  const shapeKey = shape === null ? null : `${database}\u0000${shape}`
  const kind = shapeKey === null ? undefined : recall(shapes, shapeKey)
  if (kind !== undefined) return { allowed: true, statements: [{ kind, sql: sql.trim() }] }
  const verdict = classify(sql, database)
  remember(memo, key, verdict)
  // Only a single statement that is the whole text: the shape's sharers then are too, and their own text is their statement.
  if (shapeKey !== null && verdict.allowed && verdict.statements.length === 1 && verdict.statements[0]!.sql === sql.trim()) {
    remember(shapes, shapeKey, verdict.statements[0]!.kind)
  }
  return verdict
}

const classify = (sql: string, database: string): DbtVerdict => {
  const byteLength = Buffer.byteLength(sql)
  if (byteLength > DBT_STATEMENT_MAX_BYTES) return { allowed: false, reason: `statements through the dbt proxy are at most ${DBT_STATEMENT_MAX_BYTES} bytes` }
  let parsed: { stmts?: Array<{ stmt?: Node; stmt_location?: number; stmt_len?: number }> }
  try {
    parsed = parsePostgres(sql) as typeof parsed
  } catch (error) {
    // A statement this parser cannot read might be one the server can: fail closed.
    return { allowed: false, reason: `the statement could not be parsed (${error instanceof Error ? error.message : "syntax error"})` }
  }
  const statements: Array<DbtStatement> = []
  // The parser's locations count bytes of the UTF-8 text, which are its characters when it is ASCII.
  const bytes = byteLength === sql.length ? null : Buffer.from(sql, "utf8")
  const slice = (from: number, to: number | undefined) => (bytes === null ? sql.slice(from, to) : bytes.subarray(from, to).toString("utf8"))
  for (const { stmt, stmt_location: at = 0, stmt_len: length } of parsed.stmts ?? []) {
    const [key] = Object.keys(stmt ?? {})
    if (key === undefined || stmt === undefined) continue
    const statement = stmt[key]
    const reason = refusalIn(key, isNode(statement) ? statement : {}, database)
    if (reason !== undefined) return { allowed: false, reason }
    statements.push({ kind: statementName(key), sql: slice(at, length === undefined || length === 0 ? undefined : at + length).trim() })
  }
  return { allowed: true, statements }
}
