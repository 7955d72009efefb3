/** A schema and a relation in it, as the catalog spells them. */
export interface NamedRelation {
  readonly schema: string
  readonly name: string
}

/** A string literal: quotes doubled, and backslashes too where the session reads escapes (MySQL's). */
export const literal = (value: string, backslashEscapes = false) =>
  `'${(backslashEscapes ? value.replaceAll("\\", "\\\\") : value).replaceAll("'", "''")}'`

/** A row of a catalog read, by position. */
export type CatalogRow = ReadonlyArray<unknown>

/**
 * A catalog read whose output has its engine's shape (Snowflake's SHOW), with how to turn it into
 * one of the shapes below, by the read's column names (lower case).
 */
export interface ReshapedRead {
  readonly sql: string
  readonly reshape: (rows: ReadonlyArray<CatalogRow>, columns: ReadonlyArray<string>) => ReadonlyArray<CatalogRow>
}

/** Facts a `facts` read may report about a table; sort_key and cluster_key rows append a column, in row order. */
export const TABLE_FACTS = ["comment", "row_estimate", "size_bytes", "partition_key", "engine", "sort_key", "cluster_key"] as const

/**
 * The catalog reads a scan runs, one set per dialect. Each returns rows in the column order given
 * here, so one assembler builds tables from every engine's catalog.
 */
export interface CatalogQueries {
  /** schema, name, kind (table|view|materialized_view|partitioned_table|foreign_table), comment, row_estimate, size_bytes, definition, partition_key, engine, sort_keys (JSON array or a LINEAR(a, b) list), cluster_keys (the same) */
  readonly relations: string
  /** schema, table, name, type, nullable, default, comment, primary_key (or null when keys says), distinct_estimate, null_fraction; in column order */
  readonly columns: string
  /** schema, table, name, kind (p|f|u), columns (JSON array), ref_schema, ref_table, ref_columns (JSON array) */
  readonly keys?: string
  /** The same as `keys`, one row per key column in key order (for catalogs without JSON aggregation): schema, table, name, kind (p|f|u), column, ref_schema, ref_table, ref_column */
  readonly keyColumns?: string | ReadonlyArray<ReshapedRead>
  /** schema, table, then each of its partitions and inheritance children at every level: schema, name, its direct parent's schema and name, and its own partition key where it is partitioned in turn */
  readonly descendants?: string
  /** schema, table, name, unique, columns (JSON array), definition */
  readonly indexes?: string
  /**
   * Statistics some engines keep apart from their tables list: schema, table, fact (one of TABLE_FACTS),
   * value. A fact overrides what `relations` said. A read that fails is skipped: these describe the
   * tables, they do not define them.
   */
  readonly facts?: ReadonlyArray<string>
  /**
   * schema, name, kind and definition of these relations now, as `relations` gives them, and (where
   * the engine has them) their partitions and inheritance children at every level as
   * `schema.name` joined by U+001F: what a statement is about to read, to be told from the snapshot
   * it is governed by (a view redefined since, a table given a child since). Absent where reading
   * the catalog on every statement would cost too much.
   */
  readonly relationsNow?: (relations: ReadonlyArray<NamedRelation>) => string
}

/** Partitions and inheritance children as comparable text: each `schema.name`, sorted, joined by U+001F ("" for none). */
export const descendantSet = (names: ReadonlyArray<string>) => [...new Set(names.filter((name) => name.length > 0))].sort().join("\u001f")
