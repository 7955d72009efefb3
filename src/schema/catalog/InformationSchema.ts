import type { CatalogQueries } from "./CatalogQueries"

const SYSTEM_SCHEMAS = "('information_schema', 'pg_catalog', 'pg_internal', 'sys')"

/** The SQL-standard catalog views, for engines read through them (tables and columns; keys where a dialect adds them). */
export const informationSchemaCatalog = (prefix = ""): CatalogQueries => ({
  relations: `select table_schema, table_name, case when table_type like '%VIEW%' then 'view' else 'table' end,
      null, null, null, null, null, null, null, null
    from ${prefix}information_schema.tables where lower(table_schema) not in ${SYSTEM_SCHEMAS}
    order by table_schema, table_name`,
  columns: `select table_schema, table_name, column_name, data_type, is_nullable, column_default, null, null, null, null
    from ${prefix}information_schema.columns where lower(table_schema) not in ${SYSTEM_SCHEMAS}
    order by table_schema, table_name, ordinal_position`
})

/** ClickHouse's system tables: engine, sorting, partition and primary keys, rows and bytes. */
export const clickhouseCatalog: CatalogQueries = {
  relations: `SELECT database, name, if(engine LIKE '%View', 'view', 'table'), nullIf(comment, ''), total_rows, total_bytes,
      if(engine LIKE '%View', as_select, NULL), nullIf(partition_key, ''), engine,
      toJSONString(arrayFilter(x -> x != '', splitByString(', ', sorting_key))), NULL
    FROM system.tables WHERE database = currentDatabase() AND NOT is_temporary ORDER BY database, name`,
  columns: `SELECT database, table, name, type, startsWith(type, 'Nullable('), nullIf(default_expression, ''), nullIf(comment, ''),
      is_in_primary_key, NULL, NULL
    FROM system.columns WHERE database = currentDatabase() ORDER BY database, table, position`,
  // The primary key in key order (is_in_primary_key only says which columns are in it).
  keys: `SELECT database, name, 'primary_key', 'p', toJSONString(arrayFilter(x -> x != '', splitByString(', ', primary_key))), NULL, NULL, NULL
    FROM system.tables WHERE database = currentDatabase() AND primary_key != '' ORDER BY database, name`
}
