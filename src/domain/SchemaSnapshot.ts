import { Schema } from "effect"

const Text = Schema.NullOr(Schema.String)
const Count = Schema.NullOr(Schema.Number)

export const ColumnInfo = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  nullable: Schema.Boolean,
  default: Text,
  comment: Text,
  primary_key: Schema.Boolean,
  /** The planner's estimate of distinct values, where the engine keeps one (never a value itself). */
  distinct_estimate: Count,
  null_fraction: Count
})
export type ColumnInfo = typeof ColumnInfo.Type

export const TableRef = Schema.Struct({ schema: Schema.String, table: Schema.String })
export type TableRef = typeof TableRef.Type

export const ForeignKey = Schema.Struct({
  name: Text,
  columns: Schema.Array(Schema.String),
  references: Schema.Struct({ schema: Schema.String, table: Schema.String, columns: Schema.Array(Schema.String) })
})
export type ForeignKey = typeof ForeignKey.Type

export const IndexInfo = Schema.Struct({
  name: Schema.String,
  columns: Schema.Array(Schema.String),
  unique: Schema.Boolean,
  definition: Text
})
export type IndexInfo = typeof IndexInfo.Type

/** A partition or inheritance child, with the relation it directly belongs to, and its own partition key where it is partitioned in turn. */
export const Descendant = Schema.Struct({ schema: Schema.String, table: Schema.String, parent: TableRef, partition_key: Schema.optional(Schema.NullOr(Schema.String)) })
export type Descendant = typeof Descendant.Type

export const TABLE_KINDS = ["table", "view", "materialized_view", "partitioned_table", "foreign_table"] as const
export const TableKind = Schema.Literal(...TABLE_KINDS)
export type TableKind = typeof TableKind.Type

export const TableInfo = Schema.Struct({
  schema: Schema.String,
  name: Schema.String,
  kind: TableKind,
  comment: Text,
  row_estimate: Count,
  size_bytes: Count,
  columns: Schema.Array(ColumnInfo),
  primary_key: Schema.Array(Schema.String),
  foreign_keys: Schema.Array(ForeignKey),
  unique_keys: Schema.Array(Schema.Array(Schema.String)),
  indexes: Schema.Array(IndexInfo),
  /** A view's SELECT, so lineage can follow it. */
  definition: Text,
  partition_key: Text,
  sort_keys: Schema.Array(Schema.String),
  cluster_keys: Schema.Array(Schema.String),
  /** The storage engine where an engine has several (ClickHouse MergeTree, MySQL InnoDB). */
  engine: Text,
  /** Its partitions and inheritance children at every level (PostgreSQL), whose rows it reads; absent when none (and in older snapshots). */
  descendants: Schema.optional(Schema.Array(Descendant))
})
export type TableInfo = typeof TableInfo.Type

/** What one scan of a connection's catalog found, after its include/exclude globs. */
export const SchemaSnapshot = Schema.Struct({
  connection: Schema.String,
  db_type: Schema.String,
  /** Bumped each time a scan finds a different structure; a scan that finds the same one refreshes this version. */
  version: Schema.Int,
  /** SHA-256 over tables, columns, types, nullability and keys (not comments, row counts or sizes). */
  fingerprint: Schema.String,
  scanned_at: Schema.Date,
  scan_ms: Schema.Number,
  table_count: Schema.Int,
  column_count: Schema.Int,
  tables: Schema.Array(TableInfo)
})
export type SchemaSnapshot = typeof SchemaSnapshot.Type

export const REFRESH_PHASES = ["queued", "tables", "columns", "keys", "indexes", "statistics", "storing", "done", "failed"] as const
export const RefreshPhase = Schema.Literal(...REFRESH_PHASES)

export const RefreshStatus = Schema.Struct({
  connection: Schema.String,
  state: Schema.Literal("idle", "running", "done", "failed"),
  phase: Schema.NullOr(RefreshPhase),
  tables_done: Schema.Int,
  tables_total: Schema.NullOr(Schema.Int),
  started_at: Schema.NullOr(Schema.Date),
  finished_at: Schema.NullOr(Schema.Date),
  error: Text,
  /** The snapshot version the last finished scan produced or confirmed. */
  version: Schema.NullOr(Schema.Int),
  changed: Schema.NullOr(Schema.Boolean)
})
export type RefreshStatus = typeof RefreshStatus.Type

export const qualifiedName = (table: { readonly schema: string; readonly name: string }) => `${table.schema}.${table.name}`

/** A test of schema and table as a test of a `schema.table` name (split at its first dot). */
export const onQualifiedName = (test: (schema: string, table: string) => boolean) => (qualified: string) => {
  const dot = qualified.indexOf(".")
  return test(qualified.slice(0, dot), qualified.slice(dot + 1))
}

export const TableChange = Schema.Struct({
  table: Schema.String,
  added_columns: Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String })),
  removed_columns: Schema.Array(Schema.String),
  retyped_columns: Schema.Array(Schema.Struct({ column: Schema.String, from: Schema.String, to: Schema.String })),
  nullability_changed: Schema.Array(Schema.Struct({ column: Schema.String, nullable: Schema.Boolean })),
  keys_changed: Schema.Boolean
})
export type TableChange = typeof TableChange.Type

export const SchemaDiff = Schema.Struct({
  added_tables: Schema.Array(Schema.String),
  removed_tables: Schema.Array(Schema.String),
  changed_tables: Schema.Array(TableChange)
})
export type SchemaDiff = typeof SchemaDiff.Type

export const SchemaChange = Schema.Struct({
  id: Schema.String,
  connection: Schema.String,
  from_version: Schema.NullOr(Schema.Int),
  to_version: Schema.Int,
  detected_at: Schema.Date,
  diff: SchemaDiff
})
export type SchemaChange = typeof SchemaChange.Type
