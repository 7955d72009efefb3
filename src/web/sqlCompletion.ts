import { type SQLConfig, MSSQL, MySQL, PostgreSQL, SQLite, StandardSQL } from "@codemirror/lang-sql"

interface ScannedTable {
  readonly schema: string
  readonly name: string
  readonly columns: ReadonlyArray<{ readonly name: string }>
}

const DIALECTS: Record<string, SQLConfig["dialect"]> = {
  postgresql: PostgreSQL,
  redshift: PostgreSQL,
  mysql: MySQL,
  mssql: MSSQL,
  sqlite: SQLite,
  duckdb: PostgreSQL
}

// Where a bare table name resolves when there are several schemas.
const USUAL_DEFAULTS = ["public", "main", "dbo", "default"]

/** The editor's SQL settings for a connection: its dialect, and its tables and columns to complete, by schema. */
export const sqlConfigFor = (dbType: string, tables: ReadonlyArray<ScannedTable>): SQLConfig => {
  const schema: Record<string, Record<string, ReadonlyArray<string>>> = {}
  for (const t of tables) (schema[t.schema] ??= {})[t.name] = t.columns.map((c) => c.name)
  const names = Object.keys(schema)
  const defaultSchema = names.length === 1 ? names[0] : USUAL_DEFAULTS.find((d) => names.includes(d))
  return { dialect: DIALECTS[dbType] ?? StandardSQL, schema, ...(defaultSchema !== undefined ? { defaultSchema } : {}) }
}
