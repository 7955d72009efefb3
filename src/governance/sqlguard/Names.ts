import type { ConnectionInput } from "../../domain/Connection"

/**
 * The one name resolver: every spelling of a relation (qualified or not, quoted, in any case, with
 * the catalog written out) maps to catalog, schema and table as the connection's session resolves
 * it, lower-cased; undefined where the connection does not say what the default is. The table
 * policy, PII rules, masking at the source, the schema routes and unknown-relation checks all
 * match names through it. Lower-casing makes `"Payroll"` and `payroll` one name even where an
 * engine keeps them apart: a block or a rule then covers both, never neither.
 */
export type QualifiedName = readonly [string | undefined, string | undefined, string]

interface Defaults {
  readonly catalog: string | undefined
  readonly schema: string | undefined
  /** The catalog a two-part name may start with instead of a schema (DuckDB's database file). */
  readonly catalogAlias: string | undefined
}

const field = (c: ConnectionInput, key: string): string | undefined => {
  const value = (c as Record<string, unknown>)[key]
  return typeof value === "string" ? value : undefined
}

/** DuckDB names the database of a file after the file, without its extension (`/data/shop.duckdb` is `shop`). */
export const duckdbCatalogOf = (file: string) => {
  const base = file.split(/[\\/]/).at(-1) ?? file
  return base === ":memory:" || base === "" ? "memory" : base.includes(".") ? base.slice(0, base.lastIndexOf(".")) : base
}

/** Where an unqualified name resolves on a fresh session of each db_type. */
const defaultsOf = (c: ConnectionInput): Defaults => {
  const plain = (catalog: string | undefined, schema: string | undefined): Defaults => ({ catalog, schema, catalogAlias: undefined })
  switch (c.db_type) {
    case "postgresql":
    case "redshift":
      // The postgresql connector pins search_path to this schema.
      return plain(c.database, c.schema_name ?? "public")
    case "mssql":
      return plain(field(c, "database"), "dbo")
    case "mysql":
      return plain(undefined, field(c, "database"))
    case "clickhouse":
      return plain(undefined, field(c, "database") ?? "default")
    case "sqlite":
      return plain(undefined, "main")
    case "duckdb":
      return { catalog: undefined, schema: "main", catalogAlias: duckdbCatalogOf(c.database).toLowerCase() }
    case "trino":
      return plain(field(c, "catalog"), field(c, "schema_name"))
    case "snowflake":
      return plain(field(c, "database"), field(c, "schema_name") ?? "public")
    case "bigquery":
      return plain(c.project, field(c, "dataset"))
    case "databricks":
      return plain(field(c, "catalog"), field(c, "schema_name") ?? "default")
  }
}

const qualifyWith = (parts: ReadonlyArray<string>, defaults: Defaults, dbType: ConnectionInput["db_type"]): QualifiedName => {
  const lower = parts.map((p) => p.toLowerCase())
  const table = lower.at(-1) ?? ""
  const alias = defaults.catalogAlias
  // DuckDB's own file catalog written out is the default catalog (`shop.main.t`, and `shop.t` when no schema is named shop: DuckDB refuses the ambiguity).
  if (lower.length >= 3) return [alias !== undefined && lower.at(-3) === alias ? defaults.catalog : lower.at(-3), lower.at(-2), table]
  if (lower.length === 2) return alias !== undefined && lower[0] === alias ? [defaults.catalog, defaults.schema, table] : [defaults.catalog?.toLowerCase(), lower[0], table]
  // PostgreSQL searches pg_catalog before the search path, and every catalog table is named pg_*.
  const pgCatalog = (dbType === "postgresql" || dbType === "redshift") && table.startsWith("pg_")
  return [defaults.catalog?.toLowerCase(), pgCatalog ? "pg_catalog" : defaults.schema?.toLowerCase(), table]
}

/** A relation's name as the connection resolves it: defaults filled in, lower-cased. */
export const qualify = (parts: ReadonlyArray<string>, connection: ConnectionInput): QualifiedName => qualifyWith(parts, defaultsOf(connection), connection.db_type)

/** The connection's own default schema, lower-cased (a MySQL connection's database). */
export const defaultSchemaOf = (connection: ConnectionInput) => defaultsOf(connection).schema?.toLowerCase()

/** `schema.table` of a qualified name, the key relations are kept under. */
export const relationKey = (name: QualifiedName) => `${name[1] ?? ""}.${name[2]}`
