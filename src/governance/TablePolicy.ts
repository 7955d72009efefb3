import type { ConnectionInput } from "../domain/Connection"
import { globRegex } from "../domain/Glob"
import type { TableReference } from "./sqlguard/Analysis"

/** catalog, schema, table; undefined where the connection does not say what the default is. */
export type QualifiedName = readonly [string | undefined, string | undefined, string]

interface Defaults {
  readonly catalog: string | undefined
  readonly schema: string | undefined
}

const field = (c: ConnectionInput, key: string): string | undefined => {
  const value = (c as Record<string, unknown>)[key]
  return typeof value === "string" ? value : undefined
}

/** Where an unqualified name resolves on a fresh session of each db_type. */
const defaultsOf = (c: ConnectionInput): Defaults => {
  switch (c.db_type) {
    case "postgresql":
    case "redshift":
      return { catalog: c.database, schema: c.schema_name ?? "public" }
    case "mssql":
      return { catalog: field(c, "database"), schema: "dbo" }
    case "mysql":
      return { catalog: undefined, schema: field(c, "database") }
    case "clickhouse":
      return { catalog: undefined, schema: field(c, "database") ?? "default" }
    case "sqlite":
    case "duckdb":
      return { catalog: undefined, schema: "main" }
    case "trino":
      return { catalog: field(c, "catalog"), schema: field(c, "schema_name") }
    case "snowflake":
      return { catalog: field(c, "database"), schema: field(c, "schema_name") ?? "public" }
    case "bigquery":
      return { catalog: c.project, schema: field(c, "dataset") }
    case "databricks":
      return { catalog: field(c, "catalog"), schema: field(c, "schema_name") ?? "default" }
  }
}

const qualifyWith = (parts: ReadonlyArray<string>, defaults: Defaults, dbType: ConnectionInput["db_type"]): QualifiedName => {
  const lower = parts.map((p) => p.toLowerCase())
  const table = lower.at(-1) ?? ""
  if (lower.length >= 3) return [lower.at(-3), lower.at(-2), table]
  if (lower.length === 2) return [defaults.catalog?.toLowerCase(), lower[0], table]
  // PostgreSQL searches pg_catalog before the search path, and every catalog table is named pg_*.
  const pgCatalog = (dbType === "postgresql" || dbType === "redshift") && table.startsWith("pg_")
  return [defaults.catalog?.toLowerCase(), pgCatalog ? "pg_catalog" : defaults.schema?.toLowerCase(), table]
}

const globMatches = (pattern: string, value: string) => globRegex(pattern).test(value)

/** An unknown default on one side matches for a block (fail closed) and does not for an allowance. */
const partMatches = (pattern: string | undefined, value: string | undefined, unknownMatches: boolean) =>
  pattern === undefined || value === undefined ? unknownMatches || pattern === value : globMatches(pattern, value)

/** A table name as the connection resolves it: defaults filled in, lower-cased. */
export const qualify = (parts: ReadonlyArray<string>, connection: ConnectionInput) => qualifyWith(parts, defaultsOf(connection), connection.db_type)

export const sameTable = (a: QualifiedName, b: QualifiedName) => matches(a, b, true) || matches(b, a, true)

const matches = (entry: QualifiedName, name: QualifiedName, unknownMatches: boolean) =>
  entry.every((part, i) => partMatches(part, name[i], unknownMatches))

const display = (name: QualifiedName) => name.filter((p) => p !== undefined).join(".")

const entriesOf = (list: ReadonlyArray<string> | undefined, defaults: Defaults, connection: ConnectionInput) =>
  (list ?? []).map((entry) => qualifyWith(entry.split("."), defaults, connection.db_type))

/** A bare name also matches a blocked table of that name in any schema, since the session's search path decides where it resolves. */
const blockOf = (blocked: ReadonlyArray<QualifiedName>, table: TableReference, name: QualifiedName) =>
  blocked.find((entry) => matches(entry, name, true) || (table.parts.length === 1 && globMatches(entry[2], name[2])))

/** The blocked_tables entry a table reference matches, as the connection qualifies it; undefined when none does. */
export const blockedBy = (table: TableReference, connection: ConnectionInput) => {
  const defaults = defaultsOf(connection)
  const block = blockOf(entriesOf(connection.blocked_tables, defaults, connection), table, qualifyWith(table.parts, defaults, connection.db_type))
  return block === undefined ? undefined : display(block)
}

/**
 * Relations that read a blocked table without being named in blocked_tables (a view over it, its
 * partitions and inheritance children, a table one of whose partitions it is), by lower-case
 * `schema.table`, each with the blocked table it reaches.
 */
export type ReachedBlocks = ReadonlyMap<string, string>

export const NOTHING_REACHED: ReachedBlocks = new Map()

/** The blocked table a relation reaches; with the schema unknown, a relation of that name in any schema counts. */
export const reachedBlock = (name: QualifiedName, reached: ReachedBlocks) =>
  name[1] !== undefined
    ? reached.get(`${name[1]}.${name[2]}`)
    : [...reached].find(([key]) => key.slice(key.indexOf(".") + 1) === name[2])?.[1]

/**
 * Blocked tables (and the relations that reach one) and the optional allow-list of a connection,
 * matched on fully qualified names. The allow-list applies to what the statement names.
 */
export const tablePolicyRefusal = (
  tables: ReadonlyArray<TableReference>,
  connection: ConnectionInput,
  reached: ReachedBlocks = NOTHING_REACHED
): string | undefined => {
  const defaults = defaultsOf(connection)
  const blocked = entriesOf(connection.blocked_tables, defaults, connection)
  const allowed = connection.allowed_tables === undefined ? undefined : entriesOf(connection.allowed_tables, defaults, connection)
  for (const table of tables) {
    const name = qualifyWith(table.parts, defaults, connection.db_type)
    const block = blockOf(blocked, table, name)
    if (block) return `the table ${table.parts.join(".")} is blocked on this connection (${display(block)}); qualify it if you mean another schema`
    const through = reachedBlock(name, reached)
    if (through !== undefined) return `the table ${table.parts.join(".")} reads the blocked table ${through} on this connection`
    // On MySQL a connection's database is a boundary: another database on the same server is read only when allow-listed.
    const elsewhere = connection.db_type === "mysql" && defaults.schema !== undefined && name[1] !== defaults.schema.toLowerCase() && name[1] !== "information_schema"
    if (elsewhere && !allowed?.some((entry) => matches(entry, name, false))) {
      return `the table ${display(name)} is in another database than this connection's (${defaults.schema}); name it in allowed_tables to read it`
    }
    if (allowed && !allowed.some((entry) => matches(entry, name, false))) {
      return `the table ${display(name)} is not on this connection's allow-list`
    }
  }
  return undefined
}

/** Whether the connection's blocked tables and allow-list let a caller see this table at all. */
export const tableVisible = (connection: ConnectionInput) => (schema: string, table: string) =>
  tablePolicyRefusal([{ parts: [schema, table] }], connection) === undefined

