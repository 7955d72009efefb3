import type { ColumnInfo, ForeignKey, TableInfo } from "../domain/SchemaSnapshot"
import { qualifiedName } from "../domain/SchemaSnapshot"

/** Roughly four characters a token for schema text (identifiers, types, punctuation). */
export const tokenEstimate = (text: string) => Math.ceil(text.length / 4)

export const humanCount = (n: number) =>
  n >= 1e9 ? `${(n / 1e9).toFixed(1)}B` : n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}K` : `${Math.round(n)}`

const humanBytes = (n: number) =>
  n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(1)} GB` : n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MB` : `${Math.ceil(n / 1024)} KB`

/** A referenced table named as briefly as it can be: without its schema when it is the referencing table's. */
const targetOf = (from: TableInfo, fk: ForeignKey, index: number) =>
  `${fk.references.schema === from.schema ? "" : `${fk.references.schema}.`}${fk.references.table}.${fk.references.columns[index] ?? "?"}`

const fkTargets = (table: TableInfo) => {
  const targets = new Map<string, string>()
  for (const fk of table.foreign_keys) fk.columns.forEach((column, i) => targets.set(column, targetOf(table, fk, i)))
  return targets
}

/** `schema.table (12.0K rows): id integer*, customer_id integer→customers.id` — `*` a primary key column, `→` a foreign key. */
export const compactLine = (table: TableInfo) => {
  const fks = fkTargets(table)
  const rows = table.row_estimate === null ? "" : ` (${humanCount(table.row_estimate)} rows)`
  const kind = table.kind === "table" || table.kind === "partitioned_table" ? "" : ` [${table.kind.replace("_", " ")}]`
  const columns = table.columns.map((c) => `${c.name} ${c.type}${c.primary_key ? "*" : ""}${fks.has(c.name) ? `→${fks.get(c.name)}` : ""}`)
  return `${qualifiedName(table)}${kind}${rows}: ${columns.join(", ")}`
}

const columnNote = (c: ColumnInfo, rows: number | null) => {
  const notes: Array<string> = []
  if (c.comment) notes.push(c.comment.replace(/\s+/g, " "))
  if (c.distinct_estimate !== null && rows !== null && rows > 0) {
    if (c.distinct_estimate >= rows * 0.95) notes.push("unique")
    else if (c.distinct_estimate <= 20) notes.push(`${Math.round(c.distinct_estimate)} distinct values`)
  }
  return notes.length === 0 ? "" : ` -- ${notes.join("; ")}`
}

const SERIAL_TYPES: Record<string, string> = { integer: "serial", bigint: "bigserial", smallint: "smallserial" }

/** A sequence default reads as serial, which says the same in far fewer tokens. */
const typeWithDefault = (c: ColumnInfo) => {
  const serial = c.default?.startsWith("nextval(") ? SERIAL_TYPES[c.type] : undefined
  if (serial !== undefined) return serial
  return c.default === null ? c.type : `${c.type} DEFAULT ${c.default}`
}

/** CREATE TABLE text with a header comment (description, rows, size, partitioning, sort and cluster keys, engine) and the table's keys. */
export const ddlOf = (table: TableInfo) => {
  const header = [
    qualifiedName(table),
    table.comment?.replace(/\s+/g, " "),
    table.row_estimate === null ? undefined : `~${humanCount(table.row_estimate)} rows`,
    table.size_bytes === null ? undefined : humanBytes(table.size_bytes),
    table.partition_key === null ? undefined : `partitioned by ${table.partition_key}`,
    table.sort_keys.length === 0 ? undefined : `sorted by ${table.sort_keys.join(", ")}`,
    table.cluster_keys.length === 0 ? undefined : `clustered by ${table.cluster_keys.join(", ")}`,
    table.engine ?? undefined
  ].filter((part) => part !== undefined && part !== "")
  const lines = table.columns.map((c) => `  ${c.name} ${typeWithDefault(c)}${c.nullable ? "" : " NOT NULL"}`)
  const notes = table.columns.map((c) => columnNote(c, table.row_estimate))
  const constraints = [
    ...(table.primary_key.length > 0 ? [`  PRIMARY KEY (${table.primary_key.join(", ")})`] : []),
    ...table.foreign_keys.map(
      (fk) => `  FOREIGN KEY (${fk.columns.join(", ")}) REFERENCES ${fk.references.schema}.${fk.references.table} (${fk.references.columns.join(", ")})`
    )
  ]
  const body = [...lines, ...constraints].map((line, i, all) => `${line}${i < all.length - 1 ? "," : ""}${notes[i] ?? ""}`)
  const verb = table.kind === "view" || table.kind === "materialized_view" ? `CREATE ${table.kind === "view" ? "VIEW" : "MATERIALIZED VIEW"}` : "CREATE TABLE"
  return `-- ${header.join(" | ")}\n${verb} ${qualifiedName(table)} (\n${body.join("\n")}\n);`
}

/** Tables most worth showing first: most connected, then largest, then by name. */
export const byImportance = (tables: ReadonlyArray<TableInfo>) => {
  const degree = degreesOf(tables)
  return [...tables].sort(
    (a, b) =>
      (degree.get(qualifiedName(b)) ?? 0) - (degree.get(qualifiedName(a)) ?? 0) ||
      (b.row_estimate ?? 0) - (a.row_estimate ?? 0) ||
      qualifiedName(a).localeCompare(qualifiedName(b))
  )
}

/** Foreign keys in and out of each table (a key to the table itself counts once). */
export const degreesOf = (tables: ReadonlyArray<TableInfo>) => {
  const degree = new Map<string, number>()
  const bump = (name: string) => degree.set(name, (degree.get(name) ?? 0) + 1)
  for (const t of tables) {
    for (const fk of t.foreign_keys) {
      const from = qualifiedName(t)
      const to = `${fk.references.schema}.${fk.references.table}`
      bump(from)
      if (to !== from) bump(to)
    }
  }
  return degree
}

export interface SchemaText {
  readonly format: "compact" | "ddl"
  readonly text: string
  readonly table_count: number
  readonly total_tables: number
  readonly token_estimate: number
}

/** The most important `maxTables` tables as compact lines or DDL, with a token estimate. */
export const schemaText = (tables: ReadonlyArray<TableInfo>, format: "compact" | "ddl", maxTables: number): SchemaText => {
  const shown = byImportance(tables).slice(0, maxTables)
  const text = shown.map(format === "compact" ? compactLine : ddlOf).join(format === "compact" ? "\n" : "\n\n")
  return { format, text, table_count: shown.length, total_tables: tables.length, token_estimate: tokenEstimate(text) }
}

// An agent's context window comfortably holds about this much schema next to its task.
const COMFORTABLE_TOKENS = 8_000

/** Counts, the largest and most connected tables, and which format to give an agent for a schema this size. */
export const overviewOf = (tables: ReadonlyArray<TableInfo>) => {
  const degree = degreesOf(tables)
  const columns = tables.reduce((n, t) => n + t.columns.length, 0)
  const schemas = new Map<string, number>()
  for (const t of tables) schemas.set(t.schema, (schemas.get(t.schema) ?? 0) + 1)
  const ddlTokens = tokenEstimate(tables.map(ddlOf).join("\n\n"))
  const compactTokens = tokenEstimate(tables.map(compactLine).join("\n"))
  return {
    schemas: [...schemas.entries()].map(([name, count]) => ({ name, tables: count })),
    table_count: tables.filter((t) => t.kind === "table" || t.kind === "partitioned_table").length,
    view_count: tables.filter((t) => t.kind === "view" || t.kind === "materialized_view").length,
    column_count: columns,
    avg_columns_per_table: tables.length === 0 ? 0 : Math.round((columns / tables.length) * 10) / 10,
    total_rows: tables.reduce((n, t) => n + (t.row_estimate ?? 0), 0),
    foreign_key_count: tables.reduce((n, t) => n + t.foreign_keys.length, 0),
    tables_with_foreign_keys: tables.filter((t) => t.foreign_keys.length > 0).length,
    largest_tables: [...tables]
      .filter((t) => t.row_estimate !== null)
      .sort((a, b) => b.row_estimate! - a.row_estimate!)
      .slice(0, 5)
      .map((t) => ({ table: qualifiedName(t), rows: t.row_estimate!, size_bytes: t.size_bytes, columns: t.columns.length })),
    hub_tables: [...degree.entries()]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, 5)
      .map(([table, foreign_keys]) => ({ table, foreign_keys })),
    token_estimates: { ddl: ddlTokens, compact: compactTokens },
    recommended_format: (ddlTokens <= COMFORTABLE_TOKENS ? "ddl" : compactTokens <= COMFORTABLE_TOKENS ? "compact" : "link") as
      | "ddl"
      | "compact"
      | "link"
  }
}
