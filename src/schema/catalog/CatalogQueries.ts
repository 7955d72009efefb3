/**
 * The catalog reads a scan runs, one set per dialect. Each returns rows in the column order given
 * here, so one assembler builds tables from every engine's catalog.
 */
export interface CatalogQueries {
  /** schema, name, kind (table|view|materialized_view|partitioned_table|foreign_table), comment, row_estimate, size_bytes, definition, partition_key, engine, sort_keys (JSON array), cluster_keys (JSON array) */
  readonly relations: string
  /** schema, table, name, type, nullable, default, comment, primary_key (or null when keys says), distinct_estimate, null_fraction; in column order */
  readonly columns: string
  /** schema, table, name, kind (p|f|u), columns (JSON array), ref_schema, ref_table, ref_columns (JSON array) */
  readonly keys?: string
  /** The same as `keys`, one row per key column in key order (for catalogs without JSON aggregation): schema, table, name, kind (p|f|u), column, ref_schema, ref_table, ref_column */
  readonly keyColumns?: string
  /** schema, table, name, unique, columns (JSON array), definition */
  readonly indexes?: string
}
