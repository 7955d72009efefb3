import type { CatalogQueries, CatalogRow, ReshapedRead } from "./CatalogQueries"
import { informationSchemaCatalog } from "./InformationSchema"

const FIELDS = {
  p: ["schema_name", "table_name", "constraint_name", "column_name"],
  u: ["schema_name", "table_name", "constraint_name", "column_name"],
  f: ["fk_schema_name", "fk_table_name", "fk_name", "fk_column_name", "pk_schema_name", "pk_table_name", "pk_column_name"]
} as const

/** SHOW … KEYS output (one row per key column, by column name) as key-column rows in key order. */
const showKeys = (sql: string, kind: keyof typeof FIELDS): ReshapedRead => ({
  sql,
  reshape: (rows, columns) => {
    const at = (name: string) => {
      const i = columns.indexOf(name)
      return (row: CatalogRow) => (i < 0 ? null : (row[i] ?? null))
    }
    const [schema, table, name, column, refSchema, refTable, refColumn] = FIELDS[kind].map(at)
    const sequence = at("key_sequence")
    const shaped = rows.map((r) => ({
      row: [schema!(r), table!(r), name!(r), kind, column!(r), refSchema?.(r) ?? null, refTable?.(r) ?? null, refColumn?.(r) ?? null],
      order: [String(schema!(r)), String(table!(r)), String(name!(r))].join("\u0000"),
      sequence: Number(sequence(r))
    }))
    shaped.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : a.sequence - b.sequence))
    return shaped.map((s) => s.row)
  }
})

/**
 * Snowflake's information_schema has comments, row counts, bytes and clustering keys, but no
 * key_column_usage: its keys come from SHOW … KEYS over the session's database.
 */
export const snowflakeCatalog: CatalogQueries = {
  ...informationSchemaCatalog({
    tableComment: "t.comment",
    rowEstimate: "t.row_count",
    sizeBytes: "t.bytes",
    clusterKeys: "t.clustering_key",
    columnComment: "c.comment"
  }),
  keyColumns: [
    showKeys("show primary keys in database", "p"),
    showKeys("show unique keys in database", "u"),
    showKeys("show imported keys in database", "f")
  ]
}
