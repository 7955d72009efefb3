import type { ConnectionInput } from "../domain/Connection"
import { globRegex } from "../domain/Glob"
import type { TableReference } from "./sqlguard/Analysis"
import { defaultSchemaOf, type QualifiedName, qualify } from "./sqlguard/Names"

const globMatches = (pattern: string, value: string) => globRegex(pattern).test(value)

/** An unknown default on one side matches for a block (fail closed) and does not for an allowance. */
const partMatches = (pattern: string | undefined, value: string | undefined, unknownMatches: boolean) =>
  pattern === undefined || value === undefined ? unknownMatches || pattern === value : globMatches(pattern, value)

export const sameTable = (a: QualifiedName, b: QualifiedName) => matches(a, b, true) || matches(b, a, true)

const matches = (entry: QualifiedName, name: QualifiedName, unknownMatches: boolean) =>
  entry.every((part, i) => partMatches(part, name[i], unknownMatches))

const display = (name: QualifiedName) => name.filter((p) => p !== undefined).join(".")

const entriesOf = (list: ReadonlyArray<string> | undefined, connection: ConnectionInput) => (list ?? []).map((entry) => qualify(entry.split("."), connection))

/** A bare name also matches a blocked table of that name in any schema, since the session's search path decides where it resolves. */
const blockOf = (blocked: ReadonlyArray<QualifiedName>, table: TableReference, name: QualifiedName) =>
  blocked.find((entry) => matches(entry, name, true) || (table.parts.length === 1 && globMatches(entry[2], name[2])))

/** The blocked_tables entry a table reference matches, as the connection qualifies it; undefined when none does. */
export const blockedBy = (table: TableReference, connection: ConnectionInput) => {
  const block = blockOf(entriesOf(connection.blocked_tables, connection), table, qualify(table.parts, connection))
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

/** On MySQL a connection's database is a boundary: another database on the same server is read, or listed, only where allow-listed. */
const otherDatabase = (connection: ConnectionInput, schema: string | undefined) => {
  const own = defaultSchemaOf(connection)
  return connection.db_type === "mysql" && own !== undefined && schema !== own && schema !== "information_schema"
}

/**
 * Blocked tables (and the relations that reach one) and the optional allow-list of a connection,
 * matched on fully qualified names. The allow-list applies to what the statement names.
 * `databases` are those a statement lists the tables of (`SHOW TABLES FROM other_db`).
 */
export const tablePolicyRefusal = (
  tables: ReadonlyArray<TableReference>,
  connection: ConnectionInput,
  reached: ReachedBlocks = NOTHING_REACHED,
  databases: ReadonlyArray<string> = []
): string | undefined => {
  const blocked = entriesOf(connection.blocked_tables, connection)
  const allowed = connection.allowed_tables === undefined ? undefined : entriesOf(connection.allowed_tables, connection)
  for (const database of databases) {
    const schema = database.toLowerCase()
    if (otherDatabase(connection, schema) && !allowed?.some((entry) => entry[1] === undefined || globMatches(entry[1], schema))) {
      return `the database ${database} is not this connection's (${defaultSchemaOf(connection)}); name its tables in allowed_tables to list them`
    }
  }
  for (const table of tables) {
    const name = qualify(table.parts, connection)
    const block = blockOf(blocked, table, name)
    if (block) return `the table ${table.parts.join(".")} is blocked on this connection (${display(block)}); qualify it if you mean another schema`
    const through = reachedBlock(name, reached)
    if (through !== undefined) return `the table ${table.parts.join(".")} reads the blocked table ${through} on this connection`
    if (otherDatabase(connection, name[1]) && !allowed?.some((entry) => matches(entry, name, false))) {
      return `the table ${display(name)} is in another database than this connection's (${defaultSchemaOf(connection)}); name it in allowed_tables to read it`
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

